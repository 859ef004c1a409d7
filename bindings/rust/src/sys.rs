//! The raw C ABI of `include/mxlimit/c.h` (and `c_outcomes.h` and
//! `c_tiers.h`, which it includes), declared by hand (no bindgen, no crates). Every item mirrors the header one for one; read the header for
//! the contract. Use the safe wrapper in the crate root instead.

#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

/// The opaque limiter handle.
#[repr(C)]
pub struct mxlimit_limiter {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mxlimit_options {
    pub struct_size: u32,
    pub shards: u32,
}

impl Default for mxlimit_options {
    /// `MXLIMIT_OPTIONS_INIT`.
    fn default() -> Self {
        mxlimit_options {
            struct_size: std::mem::size_of::<mxlimit_options>() as u32,
            shards: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mxlimit_decision {
    pub struct_size: u32,
    pub allowed: u8,
    pub never: u8,
    pub exempt: u8,
    pub shadow_denied: u8,
    pub limited_by: u8,
    pub retry_after_ns: i64,
    pub remaining: i64,
    pub policy: *const c_char,
    pub policy_len: usize,
    pub route_key: *const c_char,
    pub route_key_len: usize,
    pub shadow_policy: *const c_char,
    pub shadow_policy_len: usize,
    pub delay_ns: i64,
    pub leases: [u64; MXLIMIT_MAX_LEASES],
    pub lease_count: u32,
    pub errcode: *const c_char,
    pub errcode_len: usize,
    pub info_uri: *const c_char,
    pub info_uri_len: usize,
    pub quota_policy: *const c_char,
    pub quota_policy_len: usize,
    pub quota_burst: i64,
    pub quota_interval_ns: i64,
    pub quota_next_ns: i64,
    pub quota_unit: u8,
    pub can_upgrade: u8,
    pub settles: u8,
    pub tier: *const c_char,
    pub tier_len: usize,
}

impl Default for mxlimit_decision {
    /// `MXLIMIT_DECISION_INIT`.
    fn default() -> Self {
        mxlimit_decision {
            struct_size: std::mem::size_of::<mxlimit_decision>() as u32,
            allowed: 0,
            never: 0,
            exempt: 0,
            shadow_denied: 0,
            limited_by: 0,
            retry_after_ns: 0,
            remaining: 0,
            policy: std::ptr::null(),
            policy_len: 0,
            route_key: std::ptr::null(),
            route_key_len: 0,
            shadow_policy: std::ptr::null(),
            shadow_policy_len: 0,
            delay_ns: 0,
            leases: [0; MXLIMIT_MAX_LEASES],
            lease_count: 0,
            errcode: std::ptr::null(),
            errcode_len: 0,
            info_uri: std::ptr::null(),
            info_uri_len: 0,
            quota_policy: std::ptr::null(),
            quota_policy_len: 0,
            quota_burst: 0,
            quota_interval_ns: 0,
            quota_next_ns: 0,
            quota_unit: 0,
            can_upgrade: 0,
            settles: 0,
            tier: std::ptr::null(),
            tier_len: 0,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mxlimit_request_options {
    pub struct_size: u32,
    pub request_bytes: i64,
}

impl Default for mxlimit_request_options {
    /// `MXLIMIT_REQUEST_OPTIONS_INIT`.
    fn default() -> Self {
        mxlimit_request_options {
            struct_size: std::mem::size_of::<mxlimit_request_options>() as u32,
            request_bytes: -1,
        }
    }
}

// Status codes (the canonical codes of absl::Status).
pub const MXLIMIT_OK: c_int = 0;
pub const MXLIMIT_EUNKNOWN: c_int = 2;
pub const MXLIMIT_EINVAL: c_int = 3;
pub const MXLIMIT_ENOTFOUND: c_int = 5;
pub const MXLIMIT_EPERM: c_int = 7;
pub const MXLIMIT_ENOMEM: c_int = 8;
pub const MXLIMIT_EPRECONDITION: c_int = 9;
pub const MXLIMIT_ERANGE: c_int = 11;
pub const MXLIMIT_EINTERNAL: c_int = 13;
pub const MXLIMIT_EUNAVAILABLE: c_int = 14;

pub const MXLIMIT_EXEMPT: u32 = 1;
pub const MXLIMIT_MAY_DELAY: u32 = 2;
pub const MXLIMIT_ORIGIN_VERIFIED: u32 = 4;

pub const MXLIMIT_SCOPE_NONE: u8 = 0;
pub const MXLIMIT_SCOPE_IP: u8 = 1;
pub const MXLIMIT_SCOPE_USER: u8 = 2;
pub const MXLIMIT_SCOPE_ORIGIN: u8 = 3;
pub const MXLIMIT_SCOPE_ROOM: u8 = 4;
pub const MXLIMIT_SCOPE_TARGET: u8 = 5;

pub const MXLIMIT_UNLIMITED_REMAINING: i64 = i64::MAX;
pub const MXLIMIT_MAX_LEASES: usize = 4;
pub const MXLIMIT_RETRY_AFTER_MAX: usize = 20;
pub const MXLIMIT_BODY_MAX: usize = 96;
pub const MXLIMIT_LIMIT_BODY_MAX: usize = 1219;
pub const MXLIMIT_RATELIMIT_POLICY_MAX: usize = 264;
pub const MXLIMIT_RATELIMIT_MAX: usize = 239;

pub const MXLIMIT_QUOTA_REQUESTS: u8 = 0;
pub const MXLIMIT_QUOTA_CONTENT_BYTES: u8 = 1;
pub const MXLIMIT_QUOTA_CONCURRENT_REQUESTS: u8 = 2;

pub const MXLIMIT_CAN_UPGRADE_UNSET: u8 = 0;
pub const MXLIMIT_CAN_UPGRADE_NO: u8 = 1;
pub const MXLIMIT_CAN_UPGRADE_YES: u8 = 2;

extern "C" {
    pub fn mxlimit_release(
        limiter: *mut mxlimit_limiter,
        leases: *const u64,
        count: usize,
        now_ns: i64,
    ) -> c_int;
    pub fn mxlimit_version() -> u32;
    pub fn mxlimit_status_name(status: c_int) -> *const c_char;
    pub fn mxlimit_free(p: *mut c_void);

    pub fn mxlimit_limiter_new_from_file(
        path: *const c_char,
        options: *const mxlimit_options,
        out: *mut *mut mxlimit_limiter,
        errmsg: *mut *mut c_char,
    ) -> c_int;
    pub fn mxlimit_limiter_new_from_yaml(
        text: *const c_char,
        len: usize,
        file_name: *const c_char,
        options: *const mxlimit_options,
        out: *mut *mut mxlimit_limiter,
        errmsg: *mut *mut c_char,
    ) -> c_int;
    pub fn mxlimit_limiter_reload_file(
        limiter: *mut mxlimit_limiter,
        path: *const c_char,
        errmsg: *mut *mut c_char,
    ) -> c_int;
    pub fn mxlimit_limiter_reload_yaml(
        limiter: *mut mxlimit_limiter,
        text: *const c_char,
        len: usize,
        file_name: *const c_char,
        errmsg: *mut *mut c_char,
    ) -> c_int;
    pub fn mxlimit_limiter_free(limiter: *mut mxlimit_limiter);

    pub fn mxlimit_check_subjects(
        limiter: *mut mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        origin: *const c_char,
        origin_len: usize,
        target_user: *const c_char,
        target_user_len: usize,
        cost: i64,
        flags: u32,
        now_ns: i64,
        out: *mut mxlimit_decision,
    ) -> c_int;
    pub fn mxlimit_peek_subjects(
        limiter: *const mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        origin: *const c_char,
        origin_len: usize,
        target_user: *const c_char,
        target_user_len: usize,
        cost: i64,
        flags: u32,
        now_ns: i64,
        out: *mut mxlimit_decision,
    ) -> c_int;
    pub fn mxlimit_charge_subjects(
        limiter: *mut mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        origin: *const c_char,
        origin_len: usize,
        target_user: *const c_char,
        target_user_len: usize,
        cost: i64,
        flags: u32,
        now_ns: i64,
    ) -> c_int;
    pub fn mxlimit_check_ex(
        limiter: *mut mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        origin: *const c_char,
        origin_len: usize,
        target_user: *const c_char,
        target_user_len: usize,
        cost: i64,
        flags: u32,
        options: *const mxlimit_request_options,
        now_ns: i64,
        out: *mut mxlimit_decision,
    ) -> c_int;
    pub fn mxlimit_peek_ex(
        limiter: *const mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        origin: *const c_char,
        origin_len: usize,
        target_user: *const c_char,
        target_user_len: usize,
        cost: i64,
        flags: u32,
        options: *const mxlimit_request_options,
        now_ns: i64,
        out: *mut mxlimit_decision,
    ) -> c_int;
    pub fn mxlimit_charge_ex(
        limiter: *mut mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        origin: *const c_char,
        origin_len: usize,
        target_user: *const c_char,
        target_user_len: usize,
        cost: i64,
        flags: u32,
        options: *const mxlimit_request_options,
        now_ns: i64,
    ) -> c_int;
    pub fn mxlimit_settle(
        limiter: *mut mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        origin: *const c_char,
        origin_len: usize,
        target_user: *const c_char,
        target_user_len: usize,
        cost: i64,
        flags: u32,
        options: *const mxlimit_request_options,
        status: c_int,
        body_bytes: i64,
        now_ns: i64,
    ) -> c_int;
    pub fn mxlimit_check(
        limiter: *mut mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        cost: i64,
        flags: u32,
        now_ns: i64,
        out: *mut mxlimit_decision,
    ) -> c_int;
    pub fn mxlimit_peek(
        limiter: *const mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        cost: i64,
        flags: u32,
        now_ns: i64,
        out: *mut mxlimit_decision,
    ) -> c_int;
    pub fn mxlimit_charge(
        limiter: *mut mxlimit_limiter,
        method: *const c_char,
        method_len: usize,
        target: *const c_char,
        target_len: usize,
        client: *const u8,
        user_id: *const c_char,
        user_id_len: usize,
        cost: i64,
        flags: u32,
        now_ns: i64,
    ) -> c_int;

    pub fn mxlimit_parse_ip(text: *const c_char, len: usize, out: *mut u8) -> c_int;
    pub fn mxlimit_monotonic_now_ns() -> i64;
    pub fn mxlimit_format_retry_after(
        decision: *const mxlimit_decision,
        buf: *mut c_char,
        cap: usize,
        len: *mut usize,
    ) -> c_int;
    pub fn mxlimit_format_body(
        decision: *const mxlimit_decision,
        buf: *mut c_char,
        cap: usize,
        len: *mut usize,
    ) -> c_int;
    pub fn mxlimit_format_ratelimit_headers(
        decision: *const mxlimit_decision,
        policy_buf: *mut c_char,
        policy_cap: usize,
        policy_len: *mut usize,
        ratelimit_buf: *mut c_char,
        ratelimit_cap: usize,
        ratelimit_len: *mut usize,
    ) -> c_int;
    pub fn mxlimit_metrics_prometheus(
        limiter: *const mxlimit_limiter,
        out: *mut *mut c_char,
        len: *mut usize,
    ) -> c_int;

    // c_tiers.h
    pub fn mxlimit_set_tier(
        limiter: *mut mxlimit_limiter,
        subject: *const c_char,
        subject_len: usize,
        tier: *const c_char,
        tier_len: usize,
        expires_in_ms: i64,
        errmsg: *mut *mut c_char,
    ) -> c_int;
    pub fn mxlimit_clear_tier(
        limiter: *mut mxlimit_limiter,
        subject: *const c_char,
        subject_len: usize,
        errmsg: *mut *mut c_char,
    ) -> c_int;
    pub fn mxlimit_list_tiers(
        limiter: *mut mxlimit_limiter,
        out_json: *mut *mut c_char,
        errmsg: *mut *mut c_char,
    ) -> c_int;
}
