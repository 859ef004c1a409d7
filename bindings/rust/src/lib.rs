//! Rust binding of mxlimit, a rate limiter for Matrix homeservers, over its
//! stable C ABI (`libmxlimit_c.so.0`, `include/mxlimit/c.h`; docs/c-api.md).
//!
//! A [`Limiter`] is built from the YAML policy file (docs/config.md) and may
//! be shared by every request thread (`Send + Sync`); [`Limiter::check`]
//! answers one request with a [`Decision`], which borrows the policy name and
//! route key from the limiter instead of copying them. Nothing on the check
//! path allocates. [`Limiter::set_tier`], [`Limiter::clear_tier`] and
//! [`Limiter::list_tiers`] manage who is in which of the policy file's tiers
//! while running ([`Decision::tier`] names a request's).
//!
//! ```no_run
//! use std::net::IpAddr;
//!
//! let limiter = mxlimit::Limiter::from_file("/etc/matrix/mxlimit.yaml")?;
//! let client: IpAddr = "203.0.113.7".parse().unwrap();
//! let request = mxlimit::Request::new("POST", "/_matrix/client/v3/login", client);
//! let d = limiter.check(&request)?;
//! if !d.allowed {
//!     // 429 M_LIMIT_EXCEEDED, with Retry-After unless there is none to give.
//!     let (body, retry_after) = (d.body(), d.retry_after_header());
//!     println!("429 {} {:?} (policy {})", body, retry_after, d.policy);
//! }
//! # Ok::<(), mxlimit::Error>(())
//! ```

pub mod sys;
mod tiers;

pub use tiers::{TierAssignment, TierKind};

use std::ffi::{CStr, CString};
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::os::raw::{c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::Duration;

/// A failed call: the status code (`sys::MXLIMIT_E*`, absl's canonical
/// numbering) and the library's message; for a policy file with errors, every
/// error, one per line, as `FILE:LINE:COL: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub code: i32,
    pub message: String,
}

impl Error {
    /// The code's name, e.g. "MXLIMIT_EINVAL".
    pub fn code_name(&self) -> &'static str {
        status_name(self.code)
    }

    fn invalid(message: &str) -> Error {
        Error {
            code: sys::MXLIMIT_EINVAL,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            f.write_str(self.code_name())
        } else {
            write!(f, "{}: {}", self.code_name(), self.message)
        }
    }
}

impl std::error::Error for Error {}

fn status_name(code: i32) -> &'static str {
    // SAFETY: the library returns a static NUL-terminated string, never NULL.
    unsafe { CStr::from_ptr(sys::mxlimit_status_name(code as c_int)) }
        .to_str()
        .unwrap_or("MXLIMIT_E?")
}

/// Turns a status and an optional malloc'd message into a `Result`, freeing
/// the message.
fn result(code: c_int, errmsg: *mut c_char) -> Result<(), Error> {
    let message = if errmsg.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated string the library allocated for us.
        let text = unsafe { CStr::from_ptr(errmsg) }
            .to_string_lossy()
            .into_owned();
        unsafe { sys::mxlimit_free(errmsg as *mut c_void) };
        text
    };
    if code == sys::MXLIMIT_OK {
        Ok(())
    } else {
        Err(Error {
            code: code as i32,
            message,
        })
    }
}

fn path_to_cstring(path: &Path) -> Result<CString, Error> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::invalid("the path contains a NUL byte"))
}

fn name_to_cstring(name: &str) -> Result<CString, Error> {
    CString::new(name).map_err(|_| Error::invalid("the file name contains a NUL byte"))
}

/// Options beyond the policy file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Engines the tables are spread over, each behind its own lock: a power
    /// of two from 1 to 256, or 0 for the default (256, fewer for small tables).
    pub shards: u32,
}

impl Options {
    fn raw(&self) -> sys::mxlimit_options {
        sys::mxlimit_options {
            shards: self.shards,
            ..Default::default()
        }
    }
}

/// One HTTP request as the limiter sees it. Borrowed: nothing is copied.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The HTTP method, e.g. "PUT".
    pub method: &'a str,
    /// The raw request target as received: path and query, still
    /// percent-encoded (bytes: a hostile client may send anything).
    pub target: &'a [u8],
    /// The client address: the socket peer, or a trusted X-Forwarded-For hop.
    pub client: IpAddr,
    /// The authenticated Matrix user ID; empty when anonymous.
    pub user_id: &'a str,
    /// How many requests this one counts as (>= 0 for check and peek; a
    /// negative cost refunds in charge).
    pub cost: i64,
    /// Trusted (an application service, an admin): neither checked nor
    /// charged.
    pub exempt: bool,
    /// A federation request's origin server (its `X-Matrix origin=`); empty
    /// for a client request.
    pub origin: &'a str,
    /// The origin's signature was verified: its buckets are keyed by the
    /// name alone, not bound to the client's network.
    pub origin_verified: bool,
    /// The account the request is about (a login's user, an invitee); empty
    /// when unknown.
    pub target_user: &'a str,
    /// The caller holds the request for [`Decision::delay`] before passing it
    /// on; without it `on_limit: delay` policies deny.
    pub may_delay: bool,
    /// The request body's length in bytes (its Content-Length), what
    /// `cost: request_bytes` policies charge; -1 (the default) when unknown,
    /// which they charge a whole burst.
    pub request_bytes: i64,
    /// Now, in nanoseconds of a monotonic clock ([`monotonic_now_ns`]).
    pub now_ns: i64,
}

impl<'a> Request<'a> {
    /// An anonymous request of cost 1, now.
    pub fn new<T: AsRef<[u8]> + ?Sized>(method: &'a str, target: &'a T, client: IpAddr) -> Self {
        Request {
            method,
            target: target.as_ref(),
            client,
            user_id: "",
            cost: 1,
            exempt: false,
            origin: "",
            origin_verified: false,
            target_user: "",
            may_delay: false,
            request_bytes: -1,
            now_ns: monotonic_now_ns(),
        }
    }

    /// The same request, with a body of `request_bytes` bytes (-1: unknown).
    pub fn request_bytes(mut self, request_bytes: i64) -> Self {
        self.request_bytes = request_bytes;
        self
    }

    /// The same request, by `user_id`.
    pub fn user(mut self, user_id: &'a str) -> Self {
        self.user_id = user_id;
        self
    }

    /// The same request, at `now_ns`.
    pub fn at(mut self, now_ns: i64) -> Self {
        self.now_ns = now_ns;
        self
    }

    /// The same request, costing `cost`.
    pub fn cost(mut self, cost: i64) -> Self {
        self.cost = cost;
        self
    }

    /// The same request, exempt or not.
    pub fn exempt(mut self, exempt: bool) -> Self {
        self.exempt = exempt;
        self
    }

    /// The same request, from federation origin `origin` (`verified` once its
    /// signature checked out).
    pub fn origin(mut self, origin: &'a str, verified: bool) -> Self {
        self.origin = origin;
        self.origin_verified = verified;
        self
    }

    /// The same request, about account `target_user`.
    pub fn target_user(mut self, target_user: &'a str) -> Self {
        self.target_user = target_user;
        self
    }

    /// The same request, from a caller that holds delayed requests or not.
    pub fn may_delay(mut self, may_delay: bool) -> Self {
        self.may_delay = may_delay;
        self
    }

    fn options(&self) -> sys::mxlimit_request_options {
        sys::mxlimit_request_options {
            request_bytes: self.request_bytes,
            ..Default::default()
        }
    }

    fn client_bytes(&self) -> [u8; 16] {
        match self.client {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        }
    }

    fn flags(&self) -> u32 {
        let mut flags = 0;
        if self.exempt {
            flags |= sys::MXLIMIT_EXEMPT;
        }
        if self.may_delay {
            flags |= sys::MXLIMIT_MAY_DELAY;
        }
        if self.origin_verified {
            flags |= sys::MXLIMIT_ORIGIN_VERIFIED;
        }
        flags
    }
}

/// Which table the denying policy's bucket is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    None,
    Ip,
    User,
    /// A federation origin server.
    Origin,
    /// The room the route's room placeholder names.
    Room,
    /// The account a request is about.
    Target,
}

/// What the limiter says about one request. A denial is a normal result, not
/// an error. The strings borrow from the [`Limiter`], and stay valid across
/// its reloads.
#[derive(Clone, Copy, Debug)]
pub struct Decision<'a> {
    pub allowed: bool,
    /// Denied, and no wait helps (the cost exceeds the burst, or the route is
    /// blocked): send no Retry-After.
    pub never: bool,
    /// Exempt: nothing was checked.
    pub exempt: bool,
    /// A shadow-mode policy would have denied (`allowed` is unaffected).
    pub shadow_denied: bool,
    pub limited_by: Scope,
    /// The exact wait until the same request would pass.
    pub retry_after: Duration,
    /// Allowed, but only after this wait (a delayed admission, requested
    /// with [`Request::may_delay`]): hold the request, then pass it on.
    pub delay: Duration,
    /// Requests of cost 1 left (`i64::MAX`: no limited policy applied).
    pub remaining: i64,
    /// The policy that denied ("" when allowed).
    pub policy: &'a str,
    /// The normalized route, e.g. "/_matrix/client/v3/login".
    pub route_key: &'a str,
    /// The first shadow policy that would have denied ("" if none).
    pub shadow_policy: &'a str,
    /// The leases taken for the request's in-flight policies: give them back
    /// with [`Limiter::release`] when the request is done (a lease never
    /// released ends by itself after its policy's `lease`).
    pub leases: Leases,
    /// A denial's Matrix `errcode`: the denying policy's own (e.g.
    /// "M_USER_LIMIT_EXCEEDED", MSC4335) or "M_LIMIT_EXCEEDED"; "" when
    /// allowed. [`Decision::body`] writes it.
    pub errcode: &'a str,
    /// MSC4335's `info_uri` of the denying policy ("" if none).
    pub info_uri: &'a str,
    /// MSC4335's `can_upgrade` of the denying policy, if it sets one.
    pub can_upgrade: Option<bool>,
    /// A policy that applied is charged on the response: call
    /// [`Limiter::settle`] when the request completes.
    pub settles: bool,
    /// The quota the RateLimit header fields describe
    /// ([`Decision::ratelimit_headers`]).
    pub quota: Quota<'a>,
    /// The tier the request was checked in (its user's or its address's:
    /// the policy file's `tiers.assign`, or [`Limiter::set_tier`]), whose
    /// rates applied; "" when none, and for a request exempt by flag or
    /// `exempt:`.
    pub tier: &'a str,
}

/// What a quota counts, as the RateLimit-Policy field's `qu` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaUnit {
    Requests,
    /// Bytes (`cost: request_bytes` or `response_bytes`).
    ContentBytes,
    /// Requests in flight (`concurrency:`).
    ConcurrentRequests,
}

/// One enforcing policy's quota and where the client's bucket stands: on a
/// denial the denying policy, otherwise the one with the smallest
/// `remaining`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota<'a> {
    /// The policy's name; "" when no limited policy applied or exempt.
    pub policy: &'a str,
    pub unit: QuotaUnit,
    /// The policy's burst, in `unit`s (an in-flight policy: its limit).
    pub burst: i64,
    /// One unit comes back every `interval` (zero for an in-flight policy).
    pub interval: Duration,
    /// How long until a request of cost 1 fits.
    pub next: Duration,
}

/// The leases one admitted request holds (at most four).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Leases {
    ids: [u64; sys::MXLIMIT_MAX_LEASES],
    count: usize,
}

impl Leases {
    /// The lease ids, as the library handed them out.
    pub fn ids(&self) -> &[u64] {
        &self.ids[..self.count]
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Borrows a (pointer, length) string of the library, which outlives `'a`.
///
/// SAFETY: `ptr` is non-NULL and points at `len` bytes valid for `'a`.
unsafe fn borrowed<'a>(ptr: *const c_char, len: usize) -> &'a str {
    if ptr.is_null() || len == 0 {
        return "";
    }
    // Policy names, route keys and tier names are ASCII (the loader checks
    // names).
    std::str::from_utf8(std::slice::from_raw_parts(ptr as *const u8, len)).unwrap_or("")
}

impl<'a> Decision<'a> {
    /// SAFETY: `raw` was filled by the library for a limiter that outlives
    /// `'a`.
    unsafe fn from_raw(raw: &sys::mxlimit_decision) -> Decision<'a> {
        Decision {
            allowed: raw.allowed != 0,
            never: raw.never != 0,
            exempt: raw.exempt != 0,
            shadow_denied: raw.shadow_denied != 0,
            limited_by: match raw.limited_by {
                sys::MXLIMIT_SCOPE_IP => Scope::Ip,
                sys::MXLIMIT_SCOPE_USER => Scope::User,
                sys::MXLIMIT_SCOPE_ORIGIN => Scope::Origin,
                sys::MXLIMIT_SCOPE_ROOM => Scope::Room,
                sys::MXLIMIT_SCOPE_TARGET => Scope::Target,
                _ => Scope::None,
            },
            retry_after: Duration::from_nanos(raw.retry_after_ns.max(0) as u64),
            delay: Duration::from_nanos(raw.delay_ns.max(0) as u64),
            remaining: raw.remaining,
            policy: borrowed(raw.policy, raw.policy_len),
            route_key: borrowed(raw.route_key, raw.route_key_len),
            shadow_policy: borrowed(raw.shadow_policy, raw.shadow_policy_len),
            leases: Leases {
                ids: raw.leases,
                count: (raw.lease_count as usize).min(sys::MXLIMIT_MAX_LEASES),
            },
            errcode: borrowed(raw.errcode, raw.errcode_len),
            info_uri: borrowed(raw.info_uri, raw.info_uri_len),
            can_upgrade: match raw.can_upgrade {
                sys::MXLIMIT_CAN_UPGRADE_NO => Some(false),
                sys::MXLIMIT_CAN_UPGRADE_YES => Some(true),
                _ => None,
            },
            settles: raw.settles != 0,
            quota: Quota {
                policy: borrowed(raw.quota_policy, raw.quota_policy_len),
                unit: match raw.quota_unit {
                    sys::MXLIMIT_QUOTA_CONTENT_BYTES => QuotaUnit::ContentBytes,
                    sys::MXLIMIT_QUOTA_CONCURRENT_REQUESTS => QuotaUnit::ConcurrentRequests,
                    _ => QuotaUnit::Requests,
                },
                burst: raw.quota_burst,
                interval: Duration::from_nanos(raw.quota_interval_ns.max(0) as u64),
                next: Duration::from_nanos(raw.quota_next_ns.max(0) as u64),
            },
            tier: borrowed(raw.tier, raw.tier_len),
        }
    }

    /// What the formatting functions read, pointing at this decision's
    /// borrowed strings (alive for `'a`).
    fn raw(&self) -> sys::mxlimit_decision {
        fn nanos(d: Duration) -> i64 {
            d.as_nanos().min(i64::MAX as u128) as i64
        }
        sys::mxlimit_decision {
            allowed: self.allowed as u8,
            never: self.never as u8,
            exempt: self.exempt as u8,
            retry_after_ns: nanos(self.retry_after),
            remaining: self.remaining,
            errcode: self.errcode.as_ptr() as *const c_char,
            errcode_len: self.errcode.len(),
            info_uri: self.info_uri.as_ptr() as *const c_char,
            info_uri_len: self.info_uri.len(),
            can_upgrade: match self.can_upgrade {
                None => sys::MXLIMIT_CAN_UPGRADE_UNSET,
                Some(false) => sys::MXLIMIT_CAN_UPGRADE_NO,
                Some(true) => sys::MXLIMIT_CAN_UPGRADE_YES,
            },
            quota_policy: self.quota.policy.as_ptr() as *const c_char,
            quota_policy_len: self.quota.policy.len(),
            quota_unit: match self.quota.unit {
                QuotaUnit::Requests => sys::MXLIMIT_QUOTA_REQUESTS,
                QuotaUnit::ContentBytes => sys::MXLIMIT_QUOTA_CONTENT_BYTES,
                QuotaUnit::ConcurrentRequests => sys::MXLIMIT_QUOTA_CONCURRENT_REQUESTS,
            },
            quota_burst: self.quota.burst,
            quota_interval_ns: nanos(self.quota.interval),
            quota_next_ns: nanos(self.quota.next),
            ..Default::default()
        }
    }

    /// The `Retry-After` header value (whole seconds, rounded up), or `None`
    /// when no header should be sent (`never`).
    pub fn retry_after_header(&self) -> Option<String> {
        let raw = self.raw();
        let mut buf = [0 as c_char; sys::MXLIMIT_RETRY_AFTER_MAX];
        let mut len = 0usize;
        // SAFETY: a valid decision and a buffer of the documented size.
        let rc =
            unsafe { sys::mxlimit_format_retry_after(&raw, buf.as_mut_ptr(), buf.len(), &mut len) };
        if rc != sys::MXLIMIT_OK || len == 0 {
            return None;
        }
        let bytes: Vec<u8> = buf[..len].iter().map(|&c| c as u8).collect();
        String::from_utf8(bytes).ok()
    }

    /// The JSON body of the 429 answer: `M_LIMIT_EXCEEDED`, or the denying
    /// policy's own errcode with MSC4335's `info_uri` and `can_upgrade`.
    pub fn body(&self) -> String {
        let raw = self.raw();
        let mut buf = [0 as c_char; sys::MXLIMIT_LIMIT_BODY_MAX];
        let mut len = 0usize;
        // SAFETY: a valid decision and a buffer of the documented size.
        let rc = unsafe { sys::mxlimit_format_body(&raw, buf.as_mut_ptr(), buf.len(), &mut len) };
        assert_eq!(
            rc,
            sys::MXLIMIT_OK,
            "MXLIMIT_LIMIT_BODY_MAX always suffices"
        );
        buf[..len].iter().map(|&c| c as u8 as char).collect()
    }

    /// The `RateLimit-Policy` and `RateLimit` header field values, e.g.
    /// `"message-send";q=10;w=50` and `"message-send";r=9;t=0`, or `None`
    /// when neither should be sent (exempt, unlimited, or `never`). Send
    /// them on allowed and denied answers when the policy file says
    /// `response_headers: ratelimit`.
    pub fn ratelimit_headers(&self) -> Option<(String, String)> {
        let raw = self.raw();
        let mut policy = [0 as c_char; sys::MXLIMIT_RATELIMIT_POLICY_MAX];
        let mut limit = [0 as c_char; sys::MXLIMIT_RATELIMIT_MAX];
        let (mut policy_len, mut limit_len) = (0usize, 0usize);
        // SAFETY: a valid decision and buffers of the documented sizes.
        let rc = unsafe {
            sys::mxlimit_format_ratelimit_headers(
                &raw,
                policy.as_mut_ptr(),
                policy.len(),
                &mut policy_len,
                limit.as_mut_ptr(),
                limit.len(),
                &mut limit_len,
            )
        };
        if rc != sys::MXLIMIT_OK || policy_len == 0 {
            return None;
        }
        let text = |buf: &[c_char], n: usize| buf[..n].iter().map(|&c| c as u8 as char).collect();
        Some((text(&policy, policy_len), text(&limit, limit_len)))
    }
}

/// Which of the calls taking a whole request [`Limiter::call`] makes, with
/// what each takes beyond the request.
enum Call<'d> {
    Check(&'d mut sys::mxlimit_decision),
    Peek(&'d mut sys::mxlimit_decision),
    Charge,
    Settle { status: c_int, body_bytes: i64 },
}

/// A thread-safe limiter: share it (`Arc<Limiter>` or `&Limiter`) among every
/// request thread. Dropping it frees the handle.
pub struct Limiter {
    raw: NonNull<sys::mxlimit_limiter>,
}

// SAFETY: every function of the C ABI may be called concurrently on one
// handle (a ShardedLimiter is inside); only free must be the last use, which
// Drop guarantees.
unsafe impl Send for Limiter {}
unsafe impl Sync for Limiter {}

impl Drop for Limiter {
    fn drop(&mut self) {
        // SAFETY: the handle is ours, and no borrow of it outlives `self`.
        unsafe { sys::mxlimit_limiter_free(self.raw.as_ptr()) }
    }
}

impl Limiter {
    /// Loads the YAML policy file at `path` (an empty file: the built-in
    /// policies and default tables).
    pub fn from_file<P: AsRef<Path>>(path: P) -> Result<Limiter, Error> {
        Limiter::from_file_with(path, &Options::default())
    }

    pub fn from_file_with<P: AsRef<Path>>(path: P, options: &Options) -> Result<Limiter, Error> {
        let path = path_to_cstring(path.as_ref())?;
        let raw_options = options.raw();
        let mut out = ptr::null_mut();
        let mut errmsg = ptr::null_mut();
        // SAFETY: valid pointers for the duration of the call.
        let rc = unsafe {
            sys::mxlimit_limiter_new_from_file(path.as_ptr(), &raw_options, &mut out, &mut errmsg)
        };
        result(rc, errmsg)?;
        Limiter::own(out)
    }

    /// Builds a limiter from policy file text; `file_name` names it in error
    /// messages.
    pub fn from_yaml(text: &str, file_name: &str) -> Result<Limiter, Error> {
        Limiter::from_yaml_with(text, file_name, &Options::default())
    }

    pub fn from_yaml_with(
        text: &str,
        file_name: &str,
        options: &Options,
    ) -> Result<Limiter, Error> {
        let name = name_to_cstring(file_name)?;
        let raw_options = options.raw();
        let mut out = ptr::null_mut();
        let mut errmsg = ptr::null_mut();
        // SAFETY: valid pointers for the duration of the call.
        let rc = unsafe {
            sys::mxlimit_limiter_new_from_yaml(
                text.as_ptr() as *const c_char,
                text.len(),
                name.as_ptr(),
                &raw_options,
                &mut out,
                &mut errmsg,
            )
        };
        result(rc, errmsg)?;
        Limiter::own(out)
    }

    fn own(raw: *mut sys::mxlimit_limiter) -> Result<Limiter, Error> {
        NonNull::new(raw).map(|raw| Limiter { raw }).ok_or(Error {
            code: sys::MXLIMIT_EINTERNAL,
            message: "no handle".to_string(),
        })
    }

    /// Reloads the policies from `path`; on any error the old ones stay in
    /// force. Safe while other threads check.
    pub fn reload_file<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        let path = path_to_cstring(path.as_ref())?;
        let mut errmsg = ptr::null_mut();
        // SAFETY: valid pointers for the duration of the call.
        let rc = unsafe {
            sys::mxlimit_limiter_reload_file(self.raw.as_ptr(), path.as_ptr(), &mut errmsg)
        };
        result(rc, errmsg)
    }

    /// Reloads the policies from text; on any error the old ones stay.
    pub fn reload_yaml(&self, text: &str, file_name: &str) -> Result<(), Error> {
        let name = name_to_cstring(file_name)?;
        let mut errmsg = ptr::null_mut();
        // SAFETY: valid pointers for the duration of the call.
        let rc = unsafe {
            sys::mxlimit_limiter_reload_yaml(
                self.raw.as_ptr(),
                text.as_ptr() as *const c_char,
                text.len(),
                name.as_ptr(),
                &mut errmsg,
            )
        };
        result(rc, errmsg)
    }

    /// Decides whether `request` may proceed and charges it if so.
    pub fn check(&self, request: &Request<'_>) -> Result<Decision<'_>, Error> {
        let mut raw = sys::mxlimit_decision::default();
        self.call(request, Call::Check(&mut raw))?;
        // SAFETY: the strings live as long as the handle, which `&self` keeps.
        Ok(unsafe { Decision::from_raw(&raw) })
    }

    /// What `check` would answer, without charging or counting anything.
    pub fn peek(&self, request: &Request<'_>) -> Result<Decision<'_>, Error> {
        let mut raw = sys::mxlimit_decision::default();
        self.call(request, Call::Peek(&mut raw))?;
        // SAFETY: as in `check`.
        Ok(unsafe { Decision::from_raw(&raw) })
    }

    /// Charges `request.cost` without checking (a negative cost refunds).
    pub fn charge(&self, request: &Request<'_>) -> Result<(), Error> {
        self.call(request, Call::Charge)
    }

    /// Charges what the response of an admitted request costs (policies
    /// with `charge: response` listing `status`, `cost: response_bytes` by
    /// `body_bytes`), once it is known: pass the request as it was checked.
    /// Only decisions with [`Decision::settles`] need it; others are
    /// charged nothing.
    pub fn settle(&self, request: &Request<'_>, status: i32, body_bytes: i64) -> Result<(), Error> {
        let status = status as c_int;
        self.call(request, Call::Settle { status, body_bytes })
    }

    /// Makes `call` with `request` marshalled into the arguments the four
    /// calls share, so that the C ABI sees a request the same way whichever
    /// of them it reaches: `mxlimit_settle` must be given the request exactly
    /// as it was checked.
    fn call(&self, request: &Request<'_>, call: Call<'_>) -> Result<(), Error> {
        let limiter = self.raw.as_ptr();
        let client = request.client_bytes();
        let options = request.options();
        // `$function` with the shared arguments, then `$tail`: the four
        // differ only after the options.
        macro_rules! with_request {
            ($function:path $(, $tail:expr)*) => {
                $function(
                    limiter,
                    request.method.as_ptr() as *const c_char,
                    request.method.len(),
                    request.target.as_ptr() as *const c_char,
                    request.target.len(),
                    client.as_ptr(),
                    request.user_id.as_ptr() as *const c_char,
                    request.user_id.len(),
                    request.origin.as_ptr() as *const c_char,
                    request.origin.len(),
                    request.target_user.as_ptr() as *const c_char,
                    request.target_user.len(),
                    request.cost,
                    request.flags(),
                    &options,
                    $($tail),*
                )
            };
        }
        // SAFETY: every (pointer, length) pair describes live memory for the
        // duration of the call, and `out` a decision of this crate's size.
        let rc = unsafe {
            match call {
                Call::Check(out) => with_request!(sys::mxlimit_check_ex, request.now_ns, out),
                Call::Peek(out) => with_request!(sys::mxlimit_peek_ex, request.now_ns, out),
                Call::Charge => with_request!(sys::mxlimit_charge_ex, request.now_ns),
                Call::Settle { status, body_bytes } => {
                    with_request!(sys::mxlimit_settle, status, body_bytes, request.now_ns)
                }
            }
        };
        result(rc, ptr::null_mut())
    }

    /// Gives back the leases of a request that is done (`decision.leases`),
    /// so that the next request of the same in-flight bucket may start.
    /// Releasing twice, or a lease that already ended, does nothing.
    /// `now_ns` is the time [`Request::at`] uses.
    pub fn release(&self, leases: &Leases, now_ns: i64) -> Result<(), Error> {
        let ids = leases.ids();
        // SAFETY: a live limiter and `ids.len()` valid lease ids.
        let rc = unsafe {
            sys::mxlimit_release(self.raw.as_ptr(), ids.as_ptr(), ids.len(), now_ns)
        };
        result(rc, ptr::null_mut())
    }

    /// The counters in the Prometheus text format, for a metrics endpoint.
    pub fn metrics_prometheus(&self) -> Result<String, Error> {
        let mut text = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: valid out-pointers; the text is freed below.
        let rc = unsafe { sys::mxlimit_metrics_prometheus(self.raw.as_ptr(), &mut text, &mut len) };
        result(rc, ptr::null_mut())?;
        // SAFETY: `len` bytes the library allocated; freed once copied.
        let out = unsafe { std::slice::from_raw_parts(text as *const u8, len) };
        let out = String::from_utf8_lossy(out).into_owned();
        unsafe { sys::mxlimit_free(text as *mut c_void) };
        Ok(out)
    }
}

/// The linked library's version, as (major, minor, patch).
pub fn version() -> (u32, u32, u32) {
    // SAFETY: no arguments.
    let v = unsafe { sys::mxlimit_version() };
    (v >> 16, (v >> 8) & 0xFF, v & 0xFF)
}

/// Now, in nanoseconds of the steady clock (CLOCK_MONOTONIC).
pub fn monotonic_now_ns() -> i64 {
    // SAFETY: no arguments.
    unsafe { sys::mxlimit_monotonic_now_ns() }
}

/// Parses an address as mxlimit does (IPv4, every IPv6 form, "[v6]", a
/// "%zone" suffix dropped). IPv4 comes back as `IpAddr::V4`.
pub fn parse_ip(text: &str) -> Result<IpAddr, Error> {
    let mut out = [0u8; 16];
    // SAFETY: `text` and a 16-byte buffer.
    let rc = unsafe {
        sys::mxlimit_parse_ip(text.as_ptr() as *const c_char, text.len(), out.as_mut_ptr())
    };
    result(rc, ptr::null_mut())?;
    let v6 = Ipv6Addr::from(out);
    Ok(match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    })
}
