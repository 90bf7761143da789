package main

import "github.com/spf13/pflag"

// defaultInUsage keeps pflag from adding "(default 0s)" to a flag whose
// usage already says what its zero value means ("(default 10m)").
func defaultInUsage(f *pflag.FlagSet, name string) {
	f.Lookup(name).DefValue = ""
}
