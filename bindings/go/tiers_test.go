package mxlimit

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

const bridgeYAML = "tiers: { bridge: { scale: 10 } }\n"

// sendsBeforeDenial counts the message sends user gets at the instant now
// before the first denial, and returns that denial.
func sendsBeforeDenial(t *testing.T, l *Limiter, user string, now int64) (int, Decision) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		d := mustCheck(t, l, &Request{Method: "PUT",
			Target: fmt.Sprintf("/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/txn%d", i),
			Client: netip.MustParseAddr("192.0.2.1"), UserID: user, Now: now})
		if !d.Allowed {
			return i, d
		}
	}
	t.Fatalf("%s: no denial in 1000 sends", user)
	return 0, Decision{}
}

func TestRuntimeTierScalesTheBuiltinBudget(t *testing.T) {
	l := mustLimiter(t, bridgeYAML) // the built-in policies are on
	now := MonotonicNow()
	n, d := sendsBeforeDenial(t, l, "@alice:example.org", now)
	if n != 10 || d.Policy != "message-send" || d.Tier != "" || d.RetryAfter != 5*time.Second {
		t.Fatalf("plain user: %d sends, then %+v", n, d)
	}
	if err := l.SetTier("@bridge:example.org", "bridge", 0); err != nil {
		t.Fatal(err)
	}
	n, d = sendsBeforeDenial(t, l, "@bridge:example.org", now)
	if n != 100 || d.Policy != "message-send" || d.LimitedBy != ScopeUser ||
		d.Tier != "bridge" || d.RetryAfter != 500*time.Millisecond {
		t.Fatalf("bridge: %d sends, then %+v", n, d)
	}
	list, err := l.ListTiers()
	want := []TierAssignment{{Kind: TierUser, Subject: "@bridge:example.org",
		Tier: "bridge", Runtime: true}}
	if err != nil || !reflect.DeepEqual(list, want) {
		t.Fatalf("ListTiers() = %+v, %v; want %+v", list, err, want)
	}

	// Cleared: its bucket is kept (no fresh burst), at the plain rates.
	if err := l.ClearTier("@bridge:example.org"); err != nil {
		t.Fatal(err)
	}
	n, d = sendsBeforeDenial(t, l, "@bridge:example.org", now)
	if n != 0 || d.Tier != "" || d.RetryAfter != 5*time.Second {
		t.Fatalf("cleared: %d sends, then %+v", n, d)
	}
	var e *Error
	if err := l.ClearTier("@bridge:example.org"); !errors.As(err, &e) || e.Code != StatusNotFound {
		t.Fatalf("second ClearTier: %v", err)
	}
	if list, err := l.ListTiers(); err != nil || len(list) != 0 || list == nil {
		t.Fatalf("ListTiers() after clearing = %#v, %v", list, err)
	}
}

func TestListTiers(t *testing.T) {
	l := mustLimiter(t, "tiers:\n  bridge: { scale: 10 }\n  suspect: { scale: 0.1 }\n"+
		"  assign:\n    networks: { \"198.51.100.0/24\": suspect }\n")
	if err := l.SetTier(`@q"uo\te:example.org`, "bridge", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := l.SetTier("2001:db8:bad::1", "suspect", 0); err != nil {
		t.Fatal(err)
	}
	list, err := l.ListTiers()
	if err != nil || len(list) != 3 {
		t.Fatalf("ListTiers() = %+v, %v", list, err)
	}
	if a := list[0]; a.Kind != TierUser || a.Subject != `@q"uo\te:example.org` ||
		a.Tier != "bridge" || !a.Runtime || a.ExpiresIn <= time.Hour-10*time.Second || a.ExpiresIn > time.Hour {
		t.Errorf("list[0] = %+v", a)
	}
	want := []TierAssignment{
		{Kind: TierNetwork, Subject: "198.51.100.0/24", Tier: "suspect"},
		{Kind: TierNetwork, Subject: "2001:db8:bad::1/128", Tier: "suspect", Runtime: true},
	}
	if !reflect.DeepEqual(list[1:], want) {
		t.Errorf("list[1:] = %+v, want %+v", list[1:], want)
	}
	d := mustCheck(t, l, &Request{Method: "GET", Target: "/_matrix/client/v3/sync?since=s1",
		Client: netip.MustParseAddr("198.51.100.7")})
	if d.Tier != "suspect" {
		t.Errorf("Tier = %q from the network", d.Tier)
	}
}

func TestTierExpires(t *testing.T) {
	l := mustLimiter(t, bridgeYAML)
	if err := l.SetTier("@temp:example.org", "bridge", 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// A sub-millisecond expiry is rounded up, not taken for "never".
	if err := l.SetTier("@brief:example.org", "bridge", time.Microsecond); err != nil {
		t.Fatal(err)
	}
	r := &Request{Method: "GET", Target: "/_matrix/client/v3/sync?since=s1",
		Client: netip.MustParseAddr("192.0.2.1"), UserID: "@temp:example.org"}
	if d := mustCheck(t, l, r); d.Tier != "bridge" {
		t.Fatalf("Tier = %q before the expiry", d.Tier)
	}
	time.Sleep(60 * time.Millisecond)
	if d := mustCheck(t, l, r); d.Tier != "" {
		t.Fatalf("Tier = %q after the expiry", d.Tier)
	}
	if list, err := l.ListTiers(); err != nil || len(list) != 0 {
		t.Fatalf("ListTiers() = %+v, %v", list, err)
	}
}

func TestTierErrors(t *testing.T) {
	l := mustLimiter(t, bridgeYAML)
	for _, c := range []struct {
		err  error
		code int
		text string
	}{
		{l.SetTier("bridge", "bridge", 0), StatusInvalid, "subject"},
		{l.SetTier("@a:example.org", "bridges", 0), StatusNotFound, `no tier is named "bridges"`},
		{l.SetTier("@a:example.org", "bridge", -time.Second), StatusInvalid, "negative"},
		{l.ClearTier("@a:example.org"), StatusNotFound, ""},
		{l.ClearTier(""), StatusInvalid, "subject"},
	} {
		var e *Error
		if !errors.As(c.err, &e) || e.Code != c.code || !strings.Contains(e.Message, c.text) {
			t.Errorf("got %v, want code %d with %q", c.err, c.code, c.text)
		}
	}
	if StatusResourceExhausted != 8 {
		t.Errorf("StatusResourceExhausted = %d", StatusResourceExhausted)
	}
}

// Tiers set and cleared while other goroutines check (cgocheck on).
func TestTiersConcurrently(t *testing.T) {
	l := mustLimiter(t, bridgeYAML)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			user := fmt.Sprintf("@user%d:example.org", g)
			for i := 0; i < 200; i++ {
				if i%2 == 0 {
					if err := l.SetTier(user, "bridge", time.Minute); err != nil {
						t.Error(err)
						return
					}
				} else if err := l.ClearTier(user); err != nil {
					t.Error(err)
					return
				}
				if _, err := l.Check(&Request{Method: "GET", Target: "/_matrix/client/v3/sync?since=s1",
					Client: netip.MustParseAddr("192.0.2.1"), UserID: user}); err != nil {
					t.Error(err)
					return
				}
				if _, err := l.ListTiers(); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}
