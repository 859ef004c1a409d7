package mxlimit_test

import (
	"fmt"
	"net/netip"

	"mxlimit"
)

// The README's use from Go.
func Example() {
	limiter, err := mxlimit.NewFromYAML("", "mxlimit.yaml", nil) // the built-ins
	if err != nil {
		panic(err) // every FILE:LINE:COL problem of the file
	}
	defer limiter.Close()
	request := &mxlimit.Request{Method: "POST", Target: "/_matrix/client/v3/login",
		Client: netip.MustParseAddr("203.0.113.7")}
	for i := 0; i < 6; i++ {
		d, _ := limiter.Check(request)
		if !d.Allowed { // 429, with Retry-After unless d.Never
			fmt.Println(d.Policy, d.RetryAfterHeader(), d.Body())
		}
	}
	// Output: login-per-ip 334 {"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests","retry_after_ms":333591}
}
