package salvage

import (
	"context"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

func TestMain(m *testing.M) { fixtures.Main(m) }

var ctx = context.Background()
