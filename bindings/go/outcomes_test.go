package mxlimit

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// The built-in failed-login-per-ip (burst 3, charged on 401 and 403): three
// failed logins settled from one address, then the next is denied; another
// address's successful logins cost nothing.
func TestDefaultConfigDeniesAfterThreeFailedLoginsSettled(t *testing.T) {
	l := mustLimiter(t, "") // the built-in policies
	login := &Request{Method: "POST", Target: "/_matrix/client/v3/login",
		Client: netip.MustParseAddr("203.0.113.50"), RequestBytes: 80, Now: 1}
	for i := 0; i < 3; i++ {
		d := mustCheck(t, l, login)
		if !d.Allowed || !d.Settles || d.Errcode != "" {
			t.Fatalf("failed login %d: %+v", i, d)
		}
		if err := l.Settle(login, 403, 60); err != nil {
			t.Fatalf("Settle: %v", err)
		}
	}
	other := &Request{Method: "POST", Target: "/_matrix/client/v3/login",
		Client: netip.MustParseAddr("198.51.100.9"), Now: 1}
	for i := 0; i < 4; i++ {
		if d := mustCheck(t, l, other); !d.Allowed {
			t.Fatalf("successful login %d from another address: %+v", i, d)
		}
		if err := l.Settle(other, 200, 300); err != nil {
			t.Fatalf("Settle: %v", err)
		}
	}
	d := mustCheck(t, l, login)
	if d.Allowed || d.LimitedBy != ScopeIP || d.Policy != "failed-login-per-ip" {
		t.Fatalf("fourth login: %+v", d)
	}
	if d.Errcode != "M_LIMIT_EXCEEDED" || d.InfoURI != "" || d.CanUpgrade != UpgradeUnset {
		t.Errorf("error: %q %q %d", d.Errcode, d.InfoURI, d.CanUpgrade)
	}
	if want := time.Hour / 612; d.RetryAfter != want {
		t.Errorf("RetryAfter = %v, want %v", d.RetryAfter, want)
	}
	q := d.Quota
	if q.Policy != "failed-login-per-ip" || q.Unit != QuotaRequests || q.Burst != 3 || q.Next != d.RetryAfter {
		t.Errorf("Quota = %+v", q)
	}
	ms := (int64(d.RetryAfter) + 999_999) / 1_000_000
	want := fmt.Sprintf(`{"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests","retry_after_ms":%d}`, ms)
	if got := d.Body(); got != want {
		t.Errorf("Body() = %s, want %s", got, want)
	}
	policy, limit, ok := d.RateLimitHeaders()
	if !ok || policy != `"failed-login-per-ip";q=3;w=18` || limit != `"failed-login-per-ip";r=0;t=6` {
		t.Errorf("RateLimitHeaders() = %q, %q, %v", policy, limit, ok)
	}
	// Bad arguments are errors, as for Charge.
	if err := l.Settle(&Request{Method: "POST"}, 403, 0); err == nil {
		t.Error("Settle without a client: no error")
	}
}

const uploadQuota = `
response_headers: ratelimit
policies:
  - name: upload-quota
    match: "/_matrix/media/v3/upload*"
    methods: [POST, PUT]
    scope: user
    layer: quota
    cost: request_bytes
    rate_limit: { unit: hour, requests_per_unit: 104857600, burst: 104857600 }
    errcode: M_USER_LIMIT_EXCEEDED
    info_uri: https://example.org/fair-use
    can_upgrade: true
`

// An upload quota per user by request bytes, with the built-ins on: the 429
// body names MSC4335's error, and the RateLimit fields describe the quota.
func TestUploadQuotaAnswersUserLimitExceeded(t *testing.T) {
	l := mustLimiter(t, uploadQuota)
	const mib = 1 << 20
	upload := Request{Method: "POST", Target: "/_matrix/media/v3/upload?filename=a",
		Client: netip.MustParseAddr("192.0.2.1"), UserID: "@uploader:example.org",
		RequestBytes: 60 * mib, Now: 1}
	// Charged its bytes at the decision: its completion has nothing to add.
	if d := mustCheck(t, l, &upload); !d.Allowed || d.Settles {
		t.Fatalf("first upload: %+v", d)
	} else if _, _, ok := d.RateLimitHeaders(); !ok {
		t.Error("no RateLimit fields on the allowed upload")
	}
	upload.RequestBytes = 50 * mib
	d := mustCheck(t, l, &upload)
	if d.Allowed || d.LimitedBy != ScopeUser || d.Policy != "upload-quota" {
		t.Fatalf("second upload: %+v", d)
	}
	if d.Errcode != "M_USER_LIMIT_EXCEEDED" || d.InfoURI != "https://example.org/fair-use" || d.CanUpgrade != UpgradeYes {
		t.Errorf("error: %q %q %d", d.Errcode, d.InfoURI, d.CanUpgrade)
	}
	if d.Quota.Unit != QuotaContentBytes || d.Quota.Burst != 104857600 {
		t.Errorf("Quota = %+v", d.Quota)
	}
	ms := (int64(d.RetryAfter) + 999_999) / 1_000_000
	want := fmt.Sprintf(`{"errcode":"M_USER_LIMIT_EXCEEDED","error":"Too many requests",`+
		`"retry_after_ms":%d,"info_uri":"https://example.org/fair-use","can_upgrade":true}`, ms)
	if got := d.Body(); got != want {
		t.Errorf("Body() = %s, want %s", got, want)
	}
	policy, limit, ok := d.RateLimitHeaders()
	if !ok || policy != `"upload-quota";q=104857600;qu="content-bytes";w=3600` ||
		limit != `"upload-quota";r=0;t=360` {
		t.Errorf("RateLimitHeaders() = %q, %q, %v", policy, limit, ok)
	}
	// Another user is untouched; an exempt request has no fields to send.
	other := upload
	other.UserID = "@other:example.org"
	other.RequestBytes = mib
	if !mustCheck(t, l, &other).Allowed {
		t.Error("another user's upload denied")
	}
	exempt := upload
	exempt.Exempt = true
	if d := mustCheck(t, l, &exempt); !d.Exempt {
		t.Errorf("exempt: %+v", d)
	} else if _, _, ok := d.RateLimitHeaders(); ok {
		t.Error("RateLimit fields for an exempt request")
	}
	// An upload of unknown length is charged a whole burst.
	unknown := upload
	unknown.UserID = "@third:example.org"
	unknown.RequestBytes = -1
	if !mustCheck(t, l, &unknown).Allowed {
		t.Error("first upload of unknown length denied")
	}
	unknown.RequestBytes = 1
	if mustCheck(t, l, &unknown).Allowed {
		t.Error("upload after one of unknown length allowed")
	}
}

// A response_bytes policy: checked at the decision, charged by Settle with
// the body's bytes for the listed statuses only.
func TestSettleChargesResponseBytes(t *testing.T) {
	l := mustLimiter(t, `
policies:
  - name: thumb-bytes
    match: /_matrix/client/v1/media/thumbnail/*
    cost: response_bytes
    status: [200]
    rate_limit: { unit: second, requests_per_unit: 1000, burst: 10000 }
`)
	thumb := &Request{Method: "GET", Target: "/_matrix/client/v1/media/thumbnail/example.org/abc",
		Client: netip.MustParseAddr("192.0.2.7"), Now: 1}
	if d := mustCheck(t, l, thumb); !d.Settles {
		t.Fatalf("decision: %+v", d)
	}
	if err := l.Settle(thumb, 404, 15000); err != nil {
		t.Fatal(err)
	}
	if !mustCheck(t, l, thumb).Allowed {
		t.Fatal("a 404 was charged")
	}
	if err := l.Settle(thumb, 200, 15000); err != nil {
		t.Fatal(err)
	}
	d := mustCheck(t, l, thumb)
	if d.Allowed || d.Policy != "thumb-bytes" || d.RetryAfter <= 5*time.Second {
		t.Fatalf("after 15000 bytes: %+v", d)
	}
}
