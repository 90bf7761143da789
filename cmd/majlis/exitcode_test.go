package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The help topic lists every stable error code under its exit status;
// this keeps the list and the mapping tables from drifting apart.
func TestExitCodesHelpListsEveryCode(t *testing.T) {
	_, list, ok := strings.Cut(exitCodesHelp, "The codes, by\nexit status:\n")
	if !ok {
		t.Fatal("exit-codes help has no list of codes")
	}
	listed := map[string]ExitCode{}
	status := ExitCode(-1)
	for _, line := range strings.Split(list, "\n") {
		if line == "" {
			continue
		}
		if m := regexp.MustCompile(`^  (\d)  (.*)$`).FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			status, line = ExitCode(n), m[2]
		} else if !strings.HasPrefix(line, "     ") {
			break
		}
		for _, code := range strings.Split(line, ",") {
			if code = strings.TrimSpace(code); code != "" {
				listed[code] = status
			}
		}
	}
	var table []struct {
		exit ExitCode
		code string
	}
	for _, m := range providerCodes {
		table = append(table, struct {
			exit ExitCode
			code string
		}{m.exit, m.code})
	}
	for _, m := range admissionCodes {
		table = append(table, struct {
			exit ExitCode
			code string
		}{m.exit, m.code})
	}
	for _, m := range serverCodes {
		table = append(table, struct {
			exit ExitCode
			code string
		}{m.exit, m.code})
	}
	for _, m := range table {
		got, ok := listed[m.code]
		switch {
		case !ok:
			t.Errorf("code %s (exit %d) is missing from 'majlis help exit-codes'", m.code, m.exit)
		case got != m.exit:
			t.Errorf("code %s is listed under exit %d, but exits %d", m.code, got, m.exit)
		}
	}
}
