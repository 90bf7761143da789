package githook

import (
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

func TestMain(m *testing.M) { fixtures.Main(m) }
