// Tiers through the binding: a user put in a tier at runtime gets the tier's
// budget under the built-in policies, the list, clearing, expiry, and the
// errors.

use std::net::IpAddr;
use std::thread;
use std::time::Duration;

use mxlimit::{monotonic_now_ns, sys, Limiter, Request, Scope, TierAssignment, TierKind};

const BRIDGE: &str = "tiers: { bridge: { scale: 10 } }\n";

/// How many message sends `user` gets at the instant `now` before the first
/// denial, and that denial's (policy, tier, retry_after).
fn sends_before_denial(
    limiter: &Limiter,
    user: &str,
    now: i64,
) -> (usize, String, String, Duration) {
    let client = IpAddr::from([192, 0, 2, 1]);
    for i in 0..1000 {
        let target = format!(
            "/_matrix/client/v3/rooms/!r:example.org/send/m.room.message/txn{}",
            i
        );
        let r = Request::new("PUT", target.as_bytes(), client)
            .user(user)
            .at(now);
        let d = limiter.check(&r).unwrap();
        if !d.allowed {
            assert_eq!(d.limited_by, Scope::User);
            return (i, d.policy.to_string(), d.tier.to_string(), d.retry_after);
        }
    }
    panic!("no denial in 1000 sends");
}

#[test]
fn a_runtime_tier_scales_the_builtin_budget() {
    let limiter = Limiter::from_yaml(BRIDGE, "tiers.yaml").unwrap(); // built-ins on
    let now = monotonic_now_ns();
    assert_eq!(
        sends_before_denial(&limiter, "@alice:example.org", now),
        (
            10,
            "message-send".to_string(),
            String::new(),
            Duration::from_secs(5)
        )
    );
    limiter
        .set_tier("@bridge:example.org", "bridge", None)
        .unwrap();
    assert_eq!(
        sends_before_denial(&limiter, "@bridge:example.org", now),
        (
            100,
            "message-send".to_string(),
            "bridge".to_string(),
            Duration::from_millis(500)
        )
    );
    assert_eq!(
        limiter.list_tiers().unwrap(),
        vec![TierAssignment {
            kind: TierKind::User,
            subject: "@bridge:example.org".to_string(),
            tier: "bridge".to_string(),
            runtime: true,
            expires_in: None,
        }]
    );

    // Cleared: its bucket is kept (no fresh burst), at the plain rates.
    limiter.clear_tier("@bridge:example.org").unwrap();
    assert_eq!(limiter.list_tiers().unwrap(), vec![]);
    let (sent, _, tier, retry_after) = sends_before_denial(&limiter, "@bridge:example.org", now);
    assert_eq!(
        (sent, tier.as_str(), retry_after),
        (0, "", Duration::from_secs(5))
    );
    let err = limiter.clear_tier("@bridge:example.org").unwrap_err();
    assert_eq!(err.code, sys::MXLIMIT_ENOTFOUND);
}

#[test]
fn the_list_has_the_files_and_the_runtime_assignments() {
    let limiter = Limiter::from_yaml(
        "tiers:\n  bridge: { scale: 10 }\n  suspect: { scale: 0.1 }\n  assign:\n    networks: { \"198.51.100.0/24\": suspect }\n",
        "tiers.yaml",
    )
    .unwrap();
    limiter
        .set_tier(
            "@q\"uo\\te:example.org",
            "bridge",
            Some(Duration::from_secs(3600)),
        )
        .unwrap();
    limiter
        .set_tier("2001:db8:bad::1", "suspect", None)
        .unwrap();
    let list = limiter.list_tiers().unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0].kind, TierKind::User);
    assert_eq!(list[0].subject, "@q\"uo\\te:example.org");
    assert_eq!(list[0].tier, "bridge");
    assert!(list[0].runtime);
    let left = list[0].expires_in.unwrap();
    assert!(left > Duration::from_secs(3590) && left <= Duration::from_secs(3600));
    assert_eq!(
        list[1..],
        [
            TierAssignment {
                kind: TierKind::Network,
                subject: "198.51.100.0/24".to_string(),
                tier: "suspect".to_string(),
                runtime: false,
                expires_in: None,
            },
            TierAssignment {
                kind: TierKind::Network,
                subject: "2001:db8:bad::1/128".to_string(),
                tier: "suspect".to_string(),
                runtime: true,
                expires_in: None,
            },
        ]
    );
    // The network's tier on a request from it.
    let r = Request::new(
        "GET",
        "/_matrix/client/v3/sync?since=s1",
        "198.51.100.7".parse::<IpAddr>().unwrap(),
    );
    assert_eq!(limiter.check(&r).unwrap().tier, "suspect");
}

#[test]
fn an_assignment_expires() {
    let limiter = Limiter::from_yaml(BRIDGE, "tiers.yaml").unwrap();
    limiter
        .set_tier(
            "@temp:example.org",
            "bridge",
            Some(Duration::from_millis(30)),
        )
        .unwrap();
    // A sub-millisecond expiry is rounded up, not taken for "never".
    limiter
        .set_tier(
            "@brief:example.org",
            "bridge",
            Some(Duration::from_micros(10)),
        )
        .unwrap();
    let r = Request::new(
        "GET",
        "/_matrix/client/v3/sync?since=s1",
        IpAddr::from([192, 0, 2, 1]),
    )
    .user("@temp:example.org");
    assert_eq!(limiter.check(&r).unwrap().tier, "bridge");
    thread::sleep(Duration::from_millis(60));
    assert_eq!(limiter.check(&r.at(monotonic_now_ns())).unwrap().tier, "");
    assert_eq!(limiter.list_tiers().unwrap(), vec![]);
}

#[test]
fn errors_name_the_problem() {
    let limiter = Limiter::from_yaml(BRIDGE, "tiers.yaml").unwrap();
    let err = limiter.set_tier("bridge", "bridge", None).unwrap_err();
    assert_eq!(err.code, sys::MXLIMIT_EINVAL);
    assert!(err.message.contains("subject"), "{}", err);
    let err = limiter
        .set_tier("@a:example.org", "bridges", None)
        .unwrap_err();
    assert_eq!(err.code, sys::MXLIMIT_ENOTFOUND);
    assert_eq!(err.code_name(), "MXLIMIT_ENOTFOUND");
    assert!(
        err.message.contains("no tier is named \"bridges\""),
        "{}",
        err
    );
    let err = limiter
        .set_tier("@a:example.org", "bridge", Some(Duration::ZERO))
        .unwrap_err();
    assert_eq!(err.code, sys::MXLIMIT_EINVAL);
    let err = limiter.clear_tier("@a:example.org").unwrap_err();
    assert_eq!(err.code, sys::MXLIMIT_ENOTFOUND);
    assert_eq!(limiter.list_tiers().unwrap(), vec![]);
}
