// Package mxlimit is the Go binding of mxlimit, a rate limiter for Matrix
// homeservers, over its stable C ABI (libmxlimit_c.so.0, found with
// pkg-config as mxlimit-c; include/mxlimit/c.h and docs/c-api.md).
//
// A Limiter is built from the YAML policy file (docs/config.md) and may be
// used from any number of goroutines at once; Check answers one request with
// a Decision. A denial is a Decision, not an error. SetTier, ClearTier and
// ListTiers manage who is in which of the policy file's tiers while running
// (Decision.Tier names a request's).
//
// Arguments cross into C as flat (pointer, length) pairs for the duration of
// the call only: cgo forbids handing C a Go struct that holds Go pointers, and
// the C side never keeps them. Errors come back with their message as a
// value, never through a per-thread "last error", which a goroutine moving
// between OS threads would lose.
package mxlimit

// #cgo pkg-config: mxlimit-c
// #include <stdlib.h>
// #include "mxlimit/c.h"
//
// // The formatting functions' decision, built on the C side: its strings are
// // Go memory, which cgo lets C read only as direct arguments, never from
// // inside a struct Go passes.
// static int mxgo_format_body(int64_t retry_after_ns, uint8_t never,
//                             const char* errcode, size_t errcode_len,
//                             const char* info_uri, size_t info_uri_len,
//                             uint8_t can_upgrade, char* buf, size_t cap,
//                             size_t* len) {
//   mxlimit_decision d = MXLIMIT_DECISION_INIT;
//   d.retry_after_ns = retry_after_ns;
//   d.never = never;
//   d.errcode = errcode;
//   d.errcode_len = errcode_len;
//   d.info_uri = info_uri;
//   d.info_uri_len = info_uri_len;
//   d.can_upgrade = can_upgrade;
//   return mxlimit_format_body(&d, buf, cap, len);
// }
// static int mxgo_format_ratelimit(uint8_t allowed, uint8_t never,
//                                  uint8_t exempt, int64_t retry_after_ns,
//                                  int64_t remaining, const char* policy,
//                                  size_t policy_len, uint8_t unit,
//                                  int64_t burst, int64_t interval_ns,
//                                  int64_t next_ns, char* policy_buf,
//                                  size_t policy_cap, size_t* policy_n,
//                                  char* limit_buf, size_t limit_cap,
//                                  size_t* limit_n) {
//   mxlimit_decision d = MXLIMIT_DECISION_INIT;
//   d.allowed = allowed;
//   d.never = never;
//   d.exempt = exempt;
//   d.retry_after_ns = retry_after_ns;
//   d.remaining = remaining;
//   d.quota_policy = policy;
//   d.quota_policy_len = policy_len;
//   d.quota_unit = unit;
//   d.quota_burst = burst;
//   d.quota_interval_ns = interval_ns;
//   d.quota_next_ns = next_ns;
//   return mxlimit_format_ratelimit_headers(&d, policy_buf, policy_cap,
//                                           policy_n, limit_buf, limit_cap,
//                                           limit_n);
// }
import "C"

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Status codes (c.h's mxlimit_status: absl's canonical numbers).
const (
	StatusOK           = int(C.MXLIMIT_OK)
	StatusInvalid      = int(C.MXLIMIT_EINVAL)
	StatusNotFound     = int(C.MXLIMIT_ENOTFOUND)
	StatusPermission   = int(C.MXLIMIT_EPERM)
	StatusNoMemory     = int(C.MXLIMIT_ENOMEM)
	StatusPrecondition = int(C.MXLIMIT_EPRECONDITION)
	StatusInternal     = int(C.MXLIMIT_EINTERNAL)
)

// Error is a failed call: the status code and the library's message; for a
// policy file with errors, every error, one per line, as FILE:LINE:COL: ....
type Error struct {
	Code    int
	Message string
}

// CodeName is the code's name, e.g. "MXLIMIT_EINVAL".
func (e *Error) CodeName() string {
	return C.GoString(C.mxlimit_status_name(C.int(e.Code)))
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.CodeName()
	}
	return e.CodeName() + ": " + e.Message
}

// result turns a status and an optional malloc'd message into an error,
// freeing the message.
func result(rc C.int, errmsg *C.char) error {
	var message string
	if errmsg != nil {
		message = C.GoString(errmsg)
		C.mxlimit_free(unsafe.Pointer(errmsg))
	}
	if rc == C.MXLIMIT_OK {
		return nil
	}
	return &Error{Code: int(rc), Message: message}
}

// cstr points C at a Go string's bytes without copying them (Go 1.19 has no
// unsafe.StringData): the first word of a string header is its data pointer.
// C reads them during the call only. An empty string may give nil, which the
// C ABI accepts with length 0.
func cstr(s string) (*C.char, C.size_t) {
	if len(s) == 0 {
		return nil, 0
	}
	return (*C.char)(*(*unsafe.Pointer)(unsafe.Pointer(&s))), C.size_t(len(s))
}

// Options beyond the policy file.
type Options struct {
	// Engines the tables are spread over, each behind its own lock: a power
	// of two from 1 to 256, or 0 for the default (256, fewer for small tables).
	Shards uint32
}

func (o *Options) raw() C.mxlimit_options {
	raw := C.mxlimit_options{struct_size: C.uint32_t(C.sizeof_mxlimit_options)}
	if o != nil {
		raw.shards = C.uint32_t(o.Shards)
	}
	return raw
}

// Limiter is a thread-safe limiter handle. Close it when done (a finalizer
// closes a forgotten one); no call may run during or after Close.
type Limiter struct {
	c *C.mxlimit_limiter
	// Go copies of the policy names, route keys and tier names decisions
	// point at, by their C address: the library keeps each string at one
	// address for the handle's life, so a decision costs no copy once a name
	// has been seen.
	names sync.Map
}

func newLimiter(c *C.mxlimit_limiter) *Limiter {
	l := &Limiter{c: c}
	runtime.SetFinalizer(l, (*Limiter).Close)
	return l
}

// NewFromFile loads the YAML policy file at path (an empty file: the
// built-in policies and default tables). opts may be nil.
func NewFromFile(path string, opts *Options) (*Limiter, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	raw := opts.raw()
	var out *C.mxlimit_limiter
	var errmsg *C.char
	rc := C.mxlimit_limiter_new_from_file(cpath, &raw, &out, &errmsg)
	if err := result(rc, errmsg); err != nil {
		return nil, err
	}
	return newLimiter(out), nil
}

// NewFromYAML builds a limiter from policy file text; fileName names it in
// error messages. opts may be nil.
func NewFromYAML(text, fileName string, opts *Options) (*Limiter, error) {
	cname := C.CString(fileName)
	defer C.free(unsafe.Pointer(cname))
	ctext, n := cstr(text)
	raw := opts.raw()
	var out *C.mxlimit_limiter
	var errmsg *C.char
	rc := C.mxlimit_limiter_new_from_yaml(ctext, n, cname, &raw, &out, &errmsg)
	runtime.KeepAlive(text)
	if err := result(rc, errmsg); err != nil {
		return nil, err
	}
	return newLimiter(out), nil
}

// ReloadFile reloads the policies from path; on any error the old ones stay
// in force. Safe while other goroutines check.
func (l *Limiter) ReloadFile(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var errmsg *C.char
	rc := C.mxlimit_limiter_reload_file(l.c, cpath, &errmsg)
	runtime.KeepAlive(l)
	return result(rc, errmsg)
}

// ReloadYAML reloads the policies from text; on any error the old ones stay.
func (l *Limiter) ReloadYAML(text, fileName string) error {
	cname := C.CString(fileName)
	defer C.free(unsafe.Pointer(cname))
	ctext, n := cstr(text)
	var errmsg *C.char
	rc := C.mxlimit_limiter_reload_yaml(l.c, ctext, n, cname, &errmsg)
	runtime.KeepAlive(text)
	runtime.KeepAlive(l)
	return result(rc, errmsg)
}

// Close frees the handle. Calling it twice is harmless.
func (l *Limiter) Close() {
	if l.c != nil {
		C.mxlimit_limiter_free(l.c)
		l.c = nil
		runtime.SetFinalizer(l, nil)
	}
}

// Request is one HTTP request as the limiter sees it.
type Request struct {
	Method string // e.g. "PUT"
	// The raw request target as received: path and query, still
	// percent-encoded.
	Target string
	// The client address: the socket peer, or a trusted X-Forwarded-For hop.
	Client netip.Addr
	// The authenticated Matrix user ID; "" when anonymous.
	UserID string
	// How many requests this one counts as; 0 means 1. Check and Peek refuse
	// a negative cost; in Charge it refunds.
	Cost int64
	// Trusted (an application service, an admin): neither checked nor
	// charged.
	Exempt bool
	// A federation request's origin server (its X-Matrix origin=); "" for a
	// client request. OriginVerified once its signature checked out: the
	// origin's buckets are then keyed by the name alone, not bound to the
	// client's network.
	Origin         string
	OriginVerified bool
	// The account the request is about (a login's user, an invitee); ""
	// when unknown.
	TargetUser string
	// The caller holds the request for Decision.Delay before passing it on;
	// without it, policies with on_limit: delay deny.
	MayDelay bool
	// The request body's length in bytes, what cost: request_bytes policies
	// charge, with net/http's convention for Request.ContentLength (pass it
	// as it is): -1 when unknown (a chunked upload), which such policies
	// charge a whole burst. NOTE: the zero value is an empty body, so a
	// caller with such policies must set it.
	RequestBytes int64
	// Now on a monotonic clock in nanoseconds (MonotonicNow); 0 reads it.
	Now int64
}

// Scope is the table of the policy that denied.
type Scope uint8

const (
	ScopeNone Scope = Scope(C.MXLIMIT_SCOPE_NONE)
	ScopeIP   Scope = Scope(C.MXLIMIT_SCOPE_IP)
	ScopeUser Scope = Scope(C.MXLIMIT_SCOPE_USER)
	// A federation origin server, a room (the route's room placeholder) and
	// the account a request is about.
	ScopeOrigin Scope = Scope(C.MXLIMIT_SCOPE_ORIGIN)
	ScopeRoom   Scope = Scope(C.MXLIMIT_SCOPE_ROOM)
	ScopeTarget Scope = Scope(C.MXLIMIT_SCOPE_TARGET)
)

func (s Scope) String() string {
	switch s {
	case ScopeIP:
		return "ip"
	case ScopeUser:
		return "user"
	case ScopeOrigin:
		return "origin"
	case ScopeRoom:
		return "room"
	case ScopeTarget:
		return "target"
	}
	return "none"
}

// Decision is what the limiter says about one request.
type Decision struct {
	Allowed bool
	// Denied, and no wait helps: send no Retry-After.
	Never bool
	// Exempt: nothing was checked.
	Exempt bool
	// A shadow-mode policy would have denied (Allowed is unaffected).
	ShadowDenied bool
	LimitedBy    Scope
	// The exact wait until the same request would pass.
	RetryAfter time.Duration
	// Allowed, but only after this wait (a delayed admission, with
	// Request.MayDelay): hold the request, then pass it on.
	Delay time.Duration
	// Requests of cost 1 left; math.MaxInt64 when no limited policy applied.
	Remaining int64
	// The policy that denied ("" when allowed), the normalized route, and
	// the first shadow policy that would have denied ("" if none).
	Policy       string
	RouteKey     string
	ShadowPolicy string
	// The leases taken for the request's in-flight policies: give them back
	// with Limiter.Release when the request is done (a lease never released
	// ends by itself after its policy's lease).
	Leases Leases
	// A denial's Matrix errcode: the denying policy's own (e.g.
	// M_USER_LIMIT_EXCEEDED, MSC4335) or M_LIMIT_EXCEEDED; "" when allowed.
	// With MSC4335's InfoURI ("" if none) and CanUpgrade. Body writes them.
	Errcode    string
	InfoURI    string
	CanUpgrade Upgrade
	// A policy that applied is charged on the response: call
	// Limiter.Settle when the request completes.
	Settles bool
	// The quota the RateLimit header fields describe (RateLimitHeaders).
	Quota Quota
	// The tier the request was checked in (its user's or its address's:
	// the policy file's tiers.assign, or SetTier), whose rates applied; ""
	// when none, and for a request exempt by Request.Exempt or exempt:.
	Tier string
}

// Upgrade is MSC4335's can_upgrade of a denying policy: unset (left out of
// the body), false or true.
type Upgrade uint8

const (
	UpgradeUnset Upgrade = Upgrade(C.MXLIMIT_CAN_UPGRADE_UNSET)
	UpgradeNo    Upgrade = Upgrade(C.MXLIMIT_CAN_UPGRADE_NO)
	UpgradeYes   Upgrade = Upgrade(C.MXLIMIT_CAN_UPGRADE_YES)
)

// QuotaUnit is what a quota counts, as the RateLimit-Policy field's qu
// names it.
type QuotaUnit uint8

const (
	QuotaRequests QuotaUnit = QuotaUnit(C.MXLIMIT_QUOTA_REQUESTS)
	// Bytes (cost: request_bytes or response_bytes).
	QuotaContentBytes QuotaUnit = QuotaUnit(C.MXLIMIT_QUOTA_CONTENT_BYTES)
	// Requests in flight (concurrency:).
	QuotaConcurrentRequests QuotaUnit = QuotaUnit(C.MXLIMIT_QUOTA_CONCURRENT_REQUESTS)
)

// Quota is one enforcing policy's quota and where the client's bucket
// stands: on a denial the denying policy, otherwise the one with the
// smallest Remaining.
type Quota struct {
	// The policy's name; "" when no limited policy applied, or exempt.
	Policy string
	Unit   QuotaUnit
	// The policy's burst in Units (an in-flight policy: its limit).
	Burst int64
	// One unit comes back every Interval (0 for an in-flight policy).
	Interval time.Duration
	// How long until a request of cost 1 fits.
	Next time.Duration
}

// Leases are the in-flight leases one admitted request holds (at most
// four). A plain value: copy it freely.
type Leases struct {
	IDs   [4]uint64
	Count int
}

// Leases.IDs holds exactly MXLIMIT_MAX_LEASES: either array below has a
// negative length otherwise.
var (
	_ [C.MXLIMIT_MAX_LEASES - 4]struct{}
	_ [4 - C.MXLIMIT_MAX_LEASES]struct{}
)

func (l *Limiter) str(p *C.char, n C.size_t) string {
	if n == 0 {
		return ""
	}
	// A pointer key: boxing it into the map's interface allocates nothing.
	// (It points at C memory, which Go's collector ignores.)
	key := unsafe.Pointer(p)
	if s, ok := l.names.Load(key); ok {
		return s.(string)
	}
	s := C.GoStringN(p, C.int(n))
	l.names.Store(key, s)
	return s
}

func (l *Limiter) decision(d *C.mxlimit_decision) Decision {
	return Decision{
		Allowed:      d.allowed != 0,
		Never:        d.never != 0,
		Exempt:       d.exempt != 0,
		ShadowDenied: d.shadow_denied != 0,
		LimitedBy:    Scope(d.limited_by),
		RetryAfter:   time.Duration(d.retry_after_ns),
		Delay:        time.Duration(d.delay_ns),
		Remaining:    int64(d.remaining),
		Policy:       l.str(d.policy, d.policy_len),
		RouteKey:     l.str(d.route_key, d.route_key_len),
		ShadowPolicy: l.str(d.shadow_policy, d.shadow_policy_len),
		Leases:       leasesOf(d),
		Errcode:      l.str(d.errcode, d.errcode_len),
		InfoURI:      l.str(d.info_uri, d.info_uri_len),
		CanUpgrade:   Upgrade(d.can_upgrade),
		Settles:      d.settles != 0,
		Quota: Quota{
			Policy:   l.str(d.quota_policy, d.quota_policy_len),
			Unit:     QuotaUnit(d.quota_unit),
			Burst:    int64(d.quota_burst),
			Interval: time.Duration(d.quota_interval_ns),
			Next:     time.Duration(d.quota_next_ns),
		},
		Tier: l.str(d.tier, d.tier_len),
	}
}

func leasesOf(d *C.mxlimit_decision) Leases {
	var out Leases
	out.Count = int(d.lease_count)
	if out.Count > len(out.IDs) {
		out.Count = len(out.IDs)
	}
	for i := 0; i < out.Count; i++ {
		out.IDs[i] = uint64(d.leases[i])
	}
	return out
}

// Release gives back the leases of a request that is done (Decision.Leases)
// at now (MonotonicNow when 0), so that the next request of the same
// in-flight bucket may start. Releasing twice, or a lease that already
// ended, does nothing.
func (l *Limiter) Release(leases Leases, now int64) error {
	if leases.Count < 0 || leases.Count > len(leases.IDs) {
		return &Error{Code: StatusInvalid, Message: "Leases.Count out of range"}
	}
	if now == 0 {
		now = MonotonicNow()
	}
	// A C array on the stack of this call: cgo passes a pointer to Go memory
	// that holds no Go pointers.
	var ids [C.MXLIMIT_MAX_LEASES]C.uint64_t
	for i := 0; i < leases.Count; i++ {
		ids[i] = C.uint64_t(leases.IDs[i])
	}
	rc := C.mxlimit_release(l.c, &ids[0], C.size_t(leases.Count), C.int64_t(now))
	runtime.KeepAlive(l)
	return result(rc, nil)
}

// call is one check, peek or charge with r's fields as flat arguments.
type call int

const (
	callCheck call = iota
	callPeek
	callCharge
	callSettle
)

// do runs one call; status and bodyBytes are callSettle's.
func (l *Limiter) do(kind call, r *Request, status int, bodyBytes int64) (Decision, error) {
	if !r.Client.IsValid() {
		return Decision{}, &Error{Code: StatusInvalid, Message: "Request.Client is not set"}
	}
	client := r.Client.As16() // IPv4 comes v4-mapped, as the C ABI wants
	method, methodLen := cstr(r.Method)
	target, targetLen := cstr(r.Target)
	user, userLen := cstr(r.UserID)
	origin, originLen := cstr(r.Origin)
	targetUser, targetUserLen := cstr(r.TargetUser)
	cost := r.Cost
	if cost == 0 {
		cost = 1
	}
	var flags C.uint32_t
	if r.Exempt {
		flags |= C.MXLIMIT_EXEMPT
	}
	if r.MayDelay {
		flags |= C.MXLIMIT_MAY_DELAY
	}
	if r.OriginVerified {
		flags |= C.MXLIMIT_ORIGIN_VERIFIED
	}
	now := r.Now
	if now == 0 {
		now = MonotonicNow()
	}
	// Plain integers only: cgo lets C read it from Go memory.
	options := C.mxlimit_request_options{
		struct_size:   C.uint32_t(C.sizeof_mxlimit_request_options),
		request_bytes: C.int64_t(r.RequestBytes),
	}
	var d C.mxlimit_decision
	d.struct_size = C.uint32_t(C.sizeof_mxlimit_decision)
	var rc C.int
	switch kind {
	case callCheck:
		rc = C.mxlimit_check_ex(l.c, method, methodLen, target, targetLen,
			(*C.uint8_t)(&client[0]), user, userLen, origin, originLen,
			targetUser, targetUserLen, C.int64_t(cost), flags, &options,
			C.int64_t(now), &d)
	case callPeek:
		rc = C.mxlimit_peek_ex(l.c, method, methodLen, target, targetLen,
			(*C.uint8_t)(&client[0]), user, userLen, origin, originLen,
			targetUser, targetUserLen, C.int64_t(cost), flags, &options,
			C.int64_t(now), &d)
	case callCharge:
		rc = C.mxlimit_charge_ex(l.c, method, methodLen, target, targetLen,
			(*C.uint8_t)(&client[0]), user, userLen, origin, originLen,
			targetUser, targetUserLen, C.int64_t(cost), flags, &options,
			C.int64_t(now))
	default:
		rc = C.mxlimit_settle(l.c, method, methodLen, target, targetLen,
			(*C.uint8_t)(&client[0]), user, userLen, origin, originLen,
			targetUser, targetUserLen, C.int64_t(cost), flags, &options,
			C.int(status), C.int64_t(bodyBytes), C.int64_t(now))
	}
	runtime.KeepAlive(r)
	runtime.KeepAlive(l)
	if err := result(rc, nil); err != nil {
		return Decision{}, err
	}
	if kind == callCharge || kind == callSettle {
		return Decision{}, nil
	}
	return l.decision(&d), nil
}

// Check decides whether r may proceed and charges it if so.
func (l *Limiter) Check(r *Request) (Decision, error) { return l.do(callCheck, r, 0, 0) }

// Peek says what Check would, without charging or counting anything.
func (l *Limiter) Peek(r *Request) (Decision, error) { return l.do(callPeek, r, 0, 0) }

// Charge charges r.Cost without checking (a negative cost refunds).
func (l *Limiter) Charge(r *Request) error {
	_, err := l.do(callCharge, r, 0, 0)
	return err
}

// Settle charges what the response of an admitted request costs, once it
// is known: policies with charge: response listing status, and cost:
// response_bytes by bodyBytes (the response body's length). Pass r as it
// was checked (with its Now, or 0 for now). Only decisions with Settles
// need it; others are charged nothing.
func (l *Limiter) Settle(r *Request, status int, bodyBytes int64) error {
	_, err := l.do(callSettle, r, status, bodyBytes)
	return err
}

// MetricsPrometheus returns the counters in the Prometheus text format.
func (l *Limiter) MetricsPrometheus() (string, error) {
	var text *C.char
	var n C.size_t
	rc := C.mxlimit_metrics_prometheus(l.c, &text, &n)
	runtime.KeepAlive(l)
	if err := result(rc, nil); err != nil {
		return "", err
	}
	defer C.mxlimit_free(unsafe.Pointer(text))
	return C.GoStringN(text, C.int(n)), nil
}

// raw is the part of a decision the formatting functions read.
func (d *Decision) raw() C.mxlimit_decision {
	var raw C.mxlimit_decision
	raw.struct_size = C.uint32_t(C.sizeof_mxlimit_decision)
	if d.Never {
		raw.never = 1
	}
	raw.retry_after_ns = C.int64_t(d.RetryAfter)
	return raw
}

// RetryAfterHeader is the Retry-After value (whole seconds, rounded up), or
// "" when no header should be sent (Never).
func (d *Decision) RetryAfterHeader() string {
	raw := d.raw()
	var buf [C.MXLIMIT_RETRY_AFTER_MAX]C.char
	var n C.size_t
	if C.mxlimit_format_retry_after(&raw, &buf[0], C.size_t(len(buf)), &n) != C.MXLIMIT_OK {
		return ""
	}
	return C.GoStringN(&buf[0], C.int(n))
}

// Body is the JSON body of the 429 answer: M_LIMIT_EXCEEDED, or the
// denying policy's own Errcode with MSC4335's InfoURI and CanUpgrade.
func (d *Decision) Body() string {
	var never C.uint8_t
	if d.Never {
		never = 1
	}
	errcode, errcodeLen := cstr(d.Errcode)
	infoURI, infoURILen := cstr(d.InfoURI)
	var buf [C.MXLIMIT_LIMIT_BODY_MAX]C.char
	var n C.size_t
	rc := C.mxgo_format_body(C.int64_t(d.RetryAfter), never, errcode, errcodeLen,
		infoURI, infoURILen, C.uint8_t(d.CanUpgrade), &buf[0], C.size_t(len(buf)), &n)
	runtime.KeepAlive(d)
	if rc != C.MXLIMIT_OK {
		// The size always suffices; only a Decision edited by hand fails.
		panic(fmt.Sprintf("mxlimit_format_body: %d", int(rc)))
	}
	return C.GoStringN(&buf[0], C.int(n))
}

// RateLimitHeaders returns the RateLimit-Policy and RateLimit header field
// values, e.g. `"message-send";q=10;w=50` and `"message-send";r=9;t=0`, and
// ok false when neither should be sent (exempt, unlimited, or Never). Send
// them on allowed and denied answers when the policy file says
// response_headers: ratelimit.
func (d *Decision) RateLimitHeaders() (policy, ratelimit string, ok bool) {
	b := func(v bool) C.uint8_t {
		if v {
			return 1
		}
		return 0
	}
	name, nameLen := cstr(d.Quota.Policy)
	var policyBuf [C.MXLIMIT_RATELIMIT_POLICY_MAX]C.char
	var limitBuf [C.MXLIMIT_RATELIMIT_MAX]C.char
	var policyN, limitN C.size_t
	rc := C.mxgo_format_ratelimit(b(d.Allowed), b(d.Never), b(d.Exempt),
		C.int64_t(d.RetryAfter), C.int64_t(d.Remaining), name, nameLen,
		C.uint8_t(d.Quota.Unit), C.int64_t(d.Quota.Burst),
		C.int64_t(d.Quota.Interval), C.int64_t(d.Quota.Next),
		&policyBuf[0], C.size_t(len(policyBuf)), &policyN,
		&limitBuf[0], C.size_t(len(limitBuf)), &limitN)
	runtime.KeepAlive(d)
	if rc != C.MXLIMIT_OK || policyN == 0 {
		return "", "", false
	}
	return C.GoStringN(&policyBuf[0], C.int(policyN)),
		C.GoStringN(&limitBuf[0], C.int(limitN)), true
}

// MonotonicNow is now in nanoseconds of the steady clock (CLOCK_MONOTONIC).
func MonotonicNow() int64 { return int64(C.mxlimit_monotonic_now_ns()) }

// ParseIP parses an address as mxlimit does (IPv4, every IPv6 form, "[v6]",
// a "%zone" suffix dropped). IPv4 comes back unmapped.
func ParseIP(text string) (netip.Addr, error) {
	ctext, n := cstr(text)
	var out [16]byte
	rc := C.mxlimit_parse_ip(ctext, n, (*C.uint8_t)(&out[0]))
	runtime.KeepAlive(text)
	if err := result(rc, nil); err != nil {
		return netip.Addr{}, err
	}
	return netip.AddrFrom16(out).Unmap(), nil
}

// Version is the linked library's version.
func Version() (major, minor, patch int) {
	v := uint32(C.mxlimit_version())
	return int(v >> 16), int(v >> 8 & 0xFF), int(v & 0xFF)
}
