package main

import (
	"os"
	"path/filepath"
	"strings"
)

// humanPath is path as people read it: relative to the working directory
// when that is shorter, else as given.
func humanPath(path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || len(rel) >= len(path) || strings.HasPrefix(rel, "../../..") {
		return path
	}
	return rel
}
