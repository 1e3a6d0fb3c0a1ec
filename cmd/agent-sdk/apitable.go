package main

import (
	"fmt"
	"strings"

	"github.com/agentsdk/agentsdk/api"
)

// apiTable lists the HTTP API for serve --help, from api.Routes.
var apiTable = func() string {
	var b strings.Builder
	for _, r := range api.Routes {
		fmt.Fprintf(&b, "  %-4s %-46s %s\n", r.Method, r.FullPath("<slug>"), r.Summary)
	}
	return b.String()
}()
