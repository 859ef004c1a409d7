package mxlimit

// Tiers (include/mxlimit/c_tiers.h; docs/policies.md, "Tiers"): putting a
// user or a network in one of the policy file's tiers while running, taking
// it out, and listing who is in which. A request's tier comes back in
// Decision.Tier.

// #include <stdlib.h>
// #include "mxlimit/c.h"
import "C"

import (
	"encoding/json"
	"runtime"
	"time"
	"unsafe"
)

// StatusResourceExhausted is MXLIMIT_ENOMEM under its canonical name
// (absl's kResourceExhausted), as SetTier returns it when the cap on
// runtime assignments is reached.
const StatusResourceExhausted = StatusNoMemory

// TierKind is who a tier assignment is for.
type TierKind string

const (
	TierUser    TierKind = "user"    // a Matrix user ID
	TierNetwork TierKind = "network" // a network (an address is a /32 or /128)
)

// TierAssignment is one tier assignment in force, as ListTiers reports it.
type TierAssignment struct {
	Kind TierKind
	// The user ID, or the network in canonical form ("2001:db8:bad::/48").
	Subject string
	// The tier's name.
	Tier string
	// Set by SetTier; false: the policy file's tiers.assign.
	Runtime bool
	// A runtime assignment's time left, rounded up to the millisecond; 0:
	// it does not expire.
	ExpiresIn time.Duration
}

// SetTier puts subject (a user ID "@bridge:example.org", or a network or
// address "2001:db8:bad::/48") in tier, one of the policy file's tiers:,
// until expiresIn from now has passed (0: until ClearTier; rounded up to
// the millisecond), replacing an earlier runtime assignment of the subject.
// Its next request is checked against the tier's rates; its buckets are
// kept. The expiry runs on MonotonicNow's clock, which requests use unless
// their Now says otherwise.
//
// Errors (*Error): StatusInvalid (a subject that is neither, a negative
// expiresIn), StatusNotFound (no such tier), StatusResourceExhausted (the
// cap on runtime assignments, 100,000, is reached).
func (l *Limiter) SetTier(subject, tier string, expiresIn time.Duration) error {
	if expiresIn < 0 {
		return &Error{Code: StatusInvalid,
			Message: "SetTier: expiresIn is negative (0 means no expiry)"}
	}
	ms := int64(expiresIn / time.Millisecond)
	if expiresIn%time.Millisecond != 0 {
		ms++ // a sub-millisecond expiry must not become 0, "never"
	}
	csubject, subjectLen := cstr(subject)
	ctier, tierLen := cstr(tier)
	var errmsg *C.char
	rc := C.mxlimit_set_tier(l.c, csubject, subjectLen, ctier, tierLen,
		C.int64_t(ms), &errmsg)
	runtime.KeepAlive(subject)
	runtime.KeepAlive(tier)
	runtime.KeepAlive(l)
	return result(rc, errmsg)
}

// ClearTier ends the runtime assignment of subject (written as for
// SetTier); the policy file's, if any, applies again. StatusNotFound if it
// has none.
func (l *Limiter) ClearTier(subject string) error {
	csubject, subjectLen := cstr(subject)
	var errmsg *C.char
	rc := C.mxlimit_clear_tier(l.c, csubject, subjectLen, &errmsg)
	runtime.KeepAlive(subject)
	runtime.KeepAlive(l)
	return result(rc, errmsg)
}

// ListTiers returns every assignment in force now, the file's and the
// runtime ones, users first, then by subject (a subject with both has the
// file's first). It allocates; for an admin endpoint, not the request path.
func (l *Limiter) ListTiers() ([]TierAssignment, error) {
	var text *C.char
	var errmsg *C.char
	rc := C.mxlimit_list_tiers(l.c, &text, &errmsg)
	runtime.KeepAlive(l)
	if err := result(rc, errmsg); err != nil {
		return nil, err
	}
	data := []byte(C.GoString(text))
	C.mxlimit_free(unsafe.Pointer(text))
	var raw []struct {
		Kind        TierKind `json:"kind"`
		Subject     string   `json:"subject"`
		Tier        string   `json:"tier"`
		Runtime     bool     `json:"runtime"`
		ExpiresInMS int64    `json:"expires_in_ms"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &Error{Code: int(C.MXLIMIT_EINTERNAL),
			Message: "mxlimit_list_tiers: " + err.Error()}
	}
	out := make([]TierAssignment, len(raw))
	for i, a := range raw {
		out[i] = TierAssignment{Kind: a.Kind, Subject: a.Subject, Tier: a.Tier,
			Runtime: a.Runtime, ExpiresIn: time.Duration(a.ExpiresInMS) * time.Millisecond}
	}
	return out, nil
}
