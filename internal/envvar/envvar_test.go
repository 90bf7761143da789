package envvar

import (
	"errors"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	const name = "MAJLIS_TEST_DURATION"
	for _, tc := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", time.Minute, true},
		{"1s", time.Second, true},
		{"90s", 90 * time.Second, true},
		{"1h", time.Hour, true},
		{"1ns", 0, false},
		{"999ms", 0, false},
		{"0", 0, false},
		{"-5s", 0, false},
		{"soon", 0, false},
		{"1h1ns", 0, false},
		{"9223372036854775807ns", 0, false},
		{"99999999999999999999h", 0, false},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv(name, tc.value)
			got, err := Duration(name, time.Minute, time.Second, time.Hour)
			var ee *Error
			switch {
			case tc.ok && (err != nil || got != tc.want):
				t.Errorf("Duration(%q) = %v, %v; want %v", tc.value, got, err, tc.want)
			case !tc.ok && !errors.As(err, &ee):
				t.Errorf("Duration(%q) = %v, %v; want an *Error", tc.value, got, err)
			case !tc.ok && (ee.Name != name || ee.Value != tc.value || ee.Accepted == "" || ee.Reason == ""):
				t.Errorf("Duration(%q): incomplete error %+v", tc.value, ee)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 90 * time.Second: "1m30s", 2 * time.Minute: "2m", 24 * time.Hour: "24h",
		90 * time.Minute: "1h30m", time.Hour + time.Second: "1h0m1s", 1500 * time.Millisecond: "1.5s",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}
