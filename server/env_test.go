package server

import (
	"errors"
	"testing"

	"github.com/majlis-dev/majlis/internal/envvar"
)

func TestMaxHandlersEnv(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
		ok    bool
	}{
		{"", DefaultMaxHandlers, true},
		{"1", 1, true},
		{"4096", 4096, true},
		{"0", 0, false},
		{"4097", 0, false},
		{"-3", 0, false},
		{"lots", 0, false},
		{"8 ", 0, false},
	} {
		t.Setenv(MaxHandlersEnv, tc.value)
		got, err := MaxHandlers()
		var ee *envvar.Error
		switch {
		case tc.ok && (err != nil || got != tc.want):
			t.Errorf("%q: %d, %v; want %d", tc.value, got, err, tc.want)
		case !tc.ok && !errors.As(err, &ee):
			t.Errorf("%q: %d, %v; want an *envvar.Error", tc.value, got, err)
		}
	}
}
