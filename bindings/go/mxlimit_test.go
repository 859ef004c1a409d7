package mxlimit

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func mustLimiter(t *testing.T, yaml string) *Limiter {
	t.Helper()
	l, err := NewFromYAML(yaml, "test.yaml", nil)
	if err != nil {
		t.Fatalf("NewFromYAML: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}

func mustCheck(t *testing.T, l *Limiter, r *Request) Decision {
	t.Helper()
	d, err := l.Check(r)
	if err != nil {
		t.Fatalf("Check(%+v): %v", r, err)
	}
	return d
}

func TestVersion(t *testing.T) {
	major, minor, patch := Version()
	if major != 0 || minor < 1 || patch < 0 {
		t.Errorf("Version() = %d.%d.%d", major, minor, patch)
	}
}

func TestDefaultConfigLimitsLoginPerAddress(t *testing.T) {
	l := mustLimiter(t, "") // the built-in policies
	const t0 = int64(time.Second)
	login := &Request{Method: "POST", Target: "/_matrix/client/r0/login",
		Client: netip.MustParseAddr("203.0.113.7"), Now: t0}
	for left := int64(4); left >= 0; left-- {
		d := mustCheck(t, l, login)
		if !d.Allowed || d.Remaining != left || d.RouteKey != "/_matrix/client/v3/login" {
			t.Fatalf("login with %d left: %+v", left, d)
		}
	}
	d := mustCheck(t, l, login)
	if d.Allowed || d.Never || d.LimitedBy != ScopeIP || d.Policy != "login-per-ip" {
		t.Fatalf("sixth login: %+v", d)
	}
	interval := 24 * time.Hour / 259
	if d.RetryAfter < interval-1 || d.RetryAfter > interval+1 {
		t.Errorf("RetryAfter = %v, want about %v", d.RetryAfter, interval)
	}
	if got := d.RetryAfterHeader(); got != "334" {
		t.Errorf("RetryAfterHeader() = %q", got)
	}
	ms := (int64(d.RetryAfter) + 999_999) / 1_000_000
	want := fmt.Sprintf(`{"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests","retry_after_ms":%d}`, ms)
	if got := d.Body(); got != want {
		t.Errorf("Body() = %s, want %s", got, want)
	}
	// The wait is exact.
	early := *login
	early.Now = t0 + int64(d.RetryAfter) - 1
	if mustCheck(t, l, &early).Allowed {
		t.Error("allowed a nanosecond early")
	}
	onTime := *login
	onTime.Now = t0 + int64(d.RetryAfter)
	if !mustCheck(t, l, &onTime).Allowed {
		t.Error("denied after the wait")
	}
	exempt := onTime
	exempt.Exempt = true
	if d := mustCheck(t, l, &exempt); !d.Allowed || !d.Exempt {
		t.Errorf("exempt: %+v", d)
	}
}

func TestDefaultConfigLimitsMessageSendPerUser(t *testing.T) {
	l := mustLimiter(t, "")
	send := func(i int) Decision {
		return mustCheck(t, l, &Request{Method: "PUT",
			Target: fmt.Sprintf("/_matrix/client/v3/rooms/!r:x.org/send/m.room.message/t%d", i),
			Client: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}),
			UserID: "@bob:example.org",
			Now:    1})
	}
	for i := 0; i < 10; i++ {
		if !send(i).Allowed {
			t.Fatalf("send %d denied", i)
		}
	}
	if d := send(10); d.Allowed || d.LimitedBy != ScopeUser || d.Policy != "message-send" ||
		d.RouteKey != "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}" {
		t.Errorf("eleventh send: %+v", d)
	}
}

func TestDefaultConfigLimitsJoinsPerRoom(t *testing.T) {
	l := mustLimiter(t, "")
	join := func(i int) Decision {
		return mustCheck(t, l, &Request{Method: "POST",
			Target: "/_matrix/client/v3/rooms/%21wave%3Ax.org/join",
			Client: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}),
			UserID: fmt.Sprintf("@u%d:example.org", i),
			Now:    1})
	}
	for i := 0; i < 10; i++ {
		if !join(i).Allowed {
			t.Fatalf("join %d denied", i)
		}
	}
	if d := join(10); d.Allowed || d.LimitedBy != ScopeRoom || d.Policy != "joins-per-room" ||
		d.LimitedBy.String() != "room" {
		t.Errorf("eleventh join into one room: %+v", d)
	}
}

func TestOriginsTargetsAndDelays(t *testing.T) {
	l := mustLimiter(t, `
policies:
  - name: fed
    match: /_matrix/federation/*
    scope: origin
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 1, burst: 1 }
  - name: slow
    match: /_matrix/client/v3/publicRooms
    rate_limit: { unit: second, requests_per_unit: 10, burst: 1 }
    on_limit: delay
    max_delay: 500ms
`)
	client := netip.AddrFrom4([4]byte{203, 0, 113, 5})
	fed := &Request{Method: "GET", Target: "/_matrix/federation/v1/version",
		Client: client, Origin: "matrix.org", Now: 1}
	if d := mustCheck(t, l, fed); !d.Allowed {
		t.Fatalf("first federation request denied: %+v", d)
	}
	if d := mustCheck(t, l, fed); d.Allowed || d.LimitedBy != ScopeOrigin || d.Policy != "fed" {
		t.Errorf("second from the same origin and network: %+v", d)
	}
	fed.OriginVerified = true
	if d := mustCheck(t, l, fed); !d.Allowed {
		t.Errorf("verified origin is its own bucket: %+v", d)
	}
	rooms := &Request{Method: "GET", Target: "/_matrix/client/v3/publicRooms",
		Client: client, MayDelay: true, Now: 1}
	if d := mustCheck(t, l, rooms); !d.Allowed || d.Delay != 0 {
		t.Fatalf("first: %+v", d)
	}
	if d := mustCheck(t, l, rooms); !d.Allowed || d.Delay != 100*time.Millisecond || d.Policy != "slow" {
		t.Errorf("second is delayed 100ms: %+v", d)
	}
	rooms.MayDelay = false
	if d := mustCheck(t, l, rooms); d.Allowed || d.RetryAfter != 200*time.Millisecond {
		t.Errorf("without MayDelay the wait is a denial: %+v", d)
	}
}

func TestLeasesAreReleasedAndEndByThemselves(t *testing.T) {
	l := mustLimiter(t, "") // built-ins: initial-sync-in-flight, 2 per user
	client := netip.AddrFrom4([4]byte{203, 0, 113, 9})
	sync := &Request{Method: "GET", Target: "/_matrix/client/v3/sync",
		Client: client, UserID: "@a:x.org", Now: 1}
	first := mustCheck(t, l, sync)
	if !first.Allowed || first.Leases.Count != 1 {
		t.Fatalf("first initial sync: %+v", first)
	}
	if d := mustCheck(t, l, sync); !d.Allowed {
		t.Fatalf("second initial sync: %+v", d)
	}
	d := mustCheck(t, l, sync)
	if d.Allowed || d.Policy != "initial-sync-in-flight" || d.LimitedBy != ScopeUser ||
		d.Leases.Count != 0 || d.RetryAfter != 180*time.Second {
		t.Errorf("third initial sync: %+v", d)
	}
	incremental := *sync
	incremental.Target = "/_matrix/client/v3/sync?since=s1"
	if d := mustCheck(t, l, &incremental); !d.Allowed {
		t.Errorf("an incremental sync is not counted: %+v", d)
	}
	if err := l.Release(first.Leases, 1); err != nil {
		t.Fatal(err)
	}
	if d := mustCheck(t, l, sync); !d.Allowed {
		t.Errorf("after a release: %+v", d)
	}
	if err := l.Release(first.Leases, 1); err != nil {
		t.Fatal(err)
	}
	if d := mustCheck(t, l, sync); d.Allowed {
		t.Errorf("releasing twice freed a slot: %+v", d)
	}
	later := *sync
	later.Now = 1 + int64(181*time.Second)
	if d := mustCheck(t, l, &later); !d.Allowed {
		t.Errorf("after the lease time: %+v", d)
	}
	if err := l.Release(Leases{Count: 5}, 1); err == nil {
		t.Error("a count past four is an error")
	}
}

const policies = `
policies:
  - name: blocked
    match: /_matrix/client/v3/publicRooms
    rate_limit: { unit: minute, requests_per_unit: 0 }
  - name: sync-per-user
    match: /_matrix/client/v3/sync
    scope: user
    rate_limit: { unit: second, requests_per_unit: 1, burst: 2 }
`

func TestNeverPeekAndCharge(t *testing.T) {
	l := mustLimiter(t, policies)
	blocked := mustCheck(t, l, &Request{Method: "GET", Target: "/_matrix/client/v3/publicRooms",
		Client: netip.MustParseAddr("192.0.2.1"), Now: 1})
	if blocked.Allowed || !blocked.Never || blocked.RetryAfterHeader() != "" ||
		blocked.Body() != `{"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests"}` {
		t.Errorf("blocked: %+v %q %s", blocked, blocked.RetryAfterHeader(), blocked.Body())
	}
	sync := &Request{Method: "GET", Target: "/_matrix/client/v3/sync?since=s1",
		Client: netip.MustParseAddr("2001:db8::1"), UserID: "@u:x.org", Now: 1}
	for i := 0; i < 5; i++ {
		if d, err := l.Peek(sync); err != nil || !d.Allowed {
			t.Fatalf("peek %d: %+v %v", i, d, err)
		}
	}
	charge := *sync
	charge.Cost = 2
	if err := l.Charge(&charge); err != nil {
		t.Fatal(err)
	}
	if d := mustCheck(t, l, sync); d.Allowed || d.Policy != "sync-per-user" || d.RetryAfter != time.Second {
		t.Errorf("after charging the burst: %+v", d)
	}
	charge.Cost = -2 // a refund
	if err := l.Charge(&charge); err != nil {
		t.Fatal(err)
	}
	if !mustCheck(t, l, sync).Allowed {
		t.Error("denied after the refund")
	}
	negative := *sync
	negative.Cost = -1
	var e *Error
	if _, err := l.Check(&negative); !errors.As(err, &e) || e.Code != StatusInvalid {
		t.Errorf("negative cost: %v", err)
	}
	if _, err := l.Check(&Request{Method: "GET", Target: "/"}); !errors.As(err, &e) || e.Code != StatusInvalid {
		t.Errorf("no client: %v", err)
	}
}

func TestConfigErrorsNameEveryLine(t *testing.T) {
	text := "policies:\n  - name: a\n    match: /x\n    rate_limit: { unit: minutes, requests_per_unit: 1 }\n  - name: b\n    burts: 5\n"
	_, err := NewFromYAML(text, "bad.yaml", nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != StatusInvalid || e.CodeName() != "MXLIMIT_EINVAL" {
		t.Fatalf("err = %v", err)
	}
	lines := strings.Split(e.Message, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "bad.yaml:4:") {
		t.Errorf("message:\n%s", e.Message)
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "bad.yaml:") {
			t.Errorf("line without FILE:LINE:COL: %q", line)
		}
	}
	_, err = NewFromFile("/nonexistent/mxlimit.yaml", nil)
	if !errors.As(err, &e) || e.Code != StatusNotFound || !strings.Contains(e.Message, "/nonexistent/mxlimit.yaml") {
		t.Errorf("missing file: %v", err)
	}
	_, err = NewFromYAML("", "x.yaml", &Options{Shards: 3})
	if !errors.As(err, &e) || e.Code != StatusInvalid || !strings.Contains(e.Message, "shards: got 3") {
		t.Errorf("3 shards: %v", err)
	}
}

func syncPolicy(name string) string {
	return fmt.Sprintf("policies:\n  - name: %s\n    match: /_matrix/client/v3/sync\n    scope: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n", name)
}

func TestReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mxlimit.yaml")
	if err := os.WriteFile(path, []byte(syncPolicy("from-file")), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := NewFromFile(path, &Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sync := &Request{Method: "GET", Target: "/_matrix/client/v3/sync?since=s1",
		Client: netip.MustParseAddr("192.0.2.1"), UserID: "@a:x.org", Now: 1}
	mustCheck(t, l, sync)
	if d := mustCheck(t, l, sync); d.Policy != "from-file" {
		t.Fatalf("%+v", d)
	}
	for i := 0; i < 20; i++ {
		if err := l.ReloadYAML(syncPolicy(fmt.Sprintf("p-%d", i)), "r.yaml"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, []byte(syncPolicy("reloaded")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.ReloadFile(path); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, l, sync)
	if d := mustCheck(t, l, sync); d.Policy != "reloaded" {
		t.Errorf("after reload: %+v", d)
	}
	if err := os.WriteFile(path, []byte("policies: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := l.ReloadFile(path); !errors.As(err, &e) || e.Code != StatusInvalid {
		t.Errorf("broken file: %v", err)
	}
	if d := mustCheck(t, l, sync); d.Policy != "reloaded" {
		t.Errorf("old policies not kept: %+v", d)
	}
	l.Close()
	l.Close() // harmless
}

// Many goroutines on one limiter, at one instant, on the same users, while
// another reloads and reads metrics: exactly the burst passes per user.
// Run with the default cgocheck, which would panic on a Go pointer to Go
// pointers handed to C.
func TestGoroutinesShareOneLimiter(t *testing.T) {
	const burst, users, goroutines, rounds = 50, 8, 16, 20
	config := func(extra string) string {
		return fmt.Sprintf("policies:\n  - name: per-user\n    match: /_matrix/client/v3/sync\n    scope: user\n    rate_limit: { unit: hour, requests_per_unit: 1, burst: %d }\n  - name: %s\n    match: /_matrix/client/v3/keys/query\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n", burst, extra)
	}
	l := mustLimiter(t, config("extra-start"))
	var allowed [users]atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for u := 0; u < users; u++ {
					d, err := l.Check(&Request{Method: "GET", Target: "/_matrix/client/v3/sync?since=s1",
						Client: netip.AddrFrom4([4]byte{10, byte(g), byte(u), 1}),
						UserID: fmt.Sprintf("@u%d:example.org", u), Now: 1})
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						allowed[u].Add(1)
					} else if d.Policy != "per-user" {
						t.Errorf("denied by %q", d.Policy)
					}
				}
			}
		}(g)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 10; i++ {
			if err := l.ReloadYAML(config(fmt.Sprintf("extra-%d", i)), "reload.yaml"); err != nil {
				t.Error(err)
			}
			if m, err := l.MetricsPrometheus(); err != nil || !strings.Contains(m, "per-user") {
				t.Errorf("metrics: %v", err)
			}
		}
	}()
	wg.Wait()
	<-done
	for u := range allowed {
		if got := allowed[u].Load(); got != burst {
			t.Errorf("user %d: %d allowed, want %d", u, got, burst)
		}
	}
}

func TestHelpers(t *testing.T) {
	if a, err := ParseIP("[2001:db8::1%eth0]"); err != nil || a != netip.MustParseAddr("2001:db8::1") {
		t.Errorf("ParseIP v6: %v %v", a, err)
	}
	if a, err := ParseIP("::ffff:192.0.2.1"); err != nil || a != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("ParseIP mapped: %v %v", a, err)
	}
	if _, err := ParseIP("010.0.0.1"); err == nil {
		t.Error("ParseIP accepted a leading zero")
	}
	a := MonotonicNow()
	if b := MonotonicNow(); b < a {
		t.Error("clock went back")
	}
	l := mustLimiter(t, "")
	if m, err := l.MetricsPrometheus(); err != nil || !strings.Contains(m, `mxlimit_table_size{table="ip"}`) {
		t.Errorf("metrics: %v\n%s", err, m)
	}
}
