// The safe wrapper over libmxlimit_c, as a Rust homeserver would use it: the
// default policies, errors, reloads, borrowed names, threads.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use mxlimit::{sys, Limiter, Options, Request, Scope};

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn version_is_the_crates() {
    let (major, minor, patch) = mxlimit::version();
    assert_eq!(
        format!("{}.{}.{}", major, minor, patch),
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn structs_have_the_c_layout() {
    // x86_64 / aarch64: what gcc lays out for c.h (16 + 2 * 8 + 6 * 8, then
    // delay_ns, then four leases and their count, padded; then three
    // strings, three quota numbers and three bytes, padded; then the tier).
    assert_eq!(std::mem::size_of::<sys::mxlimit_decision>(), 224);
    assert_eq!(std::mem::size_of::<sys::mxlimit_options>(), 8);
    assert_eq!(std::mem::size_of::<sys::mxlimit_request_options>(), 16);
}

#[test]
fn default_config_limits_login_per_address() {
    let limiter = Limiter::from_yaml("", "empty.yaml").unwrap(); // built-ins
    let t0 = 1_000_000_000;
    let login = Request::new("POST", "/_matrix/client/r0/login", ip("203.0.113.7")).at(t0);
    for left in (0..5).rev() {
        let d = limiter.check(&login).unwrap();
        assert!(d.allowed);
        assert_eq!(d.remaining, left);
        assert_eq!(d.route_key, "/_matrix/client/v3/login");
        assert_eq!(d.policy, "");
    }
    let d = limiter.check(&login).unwrap();
    assert!(!d.allowed);
    assert!(!d.never);
    assert_eq!(d.limited_by, Scope::Ip);
    assert_eq!(d.policy, "login-per-ip");
    // A day / 259, rounded up in the answer.
    let interval = Duration::from_nanos(86_400_000_000_000 / 259);
    assert!(d.retry_after >= interval - Duration::from_nanos(1));
    assert!(d.retry_after <= interval + Duration::from_nanos(1));
    assert_eq!(d.retry_after_header().as_deref(), Some("334"));
    let ms = (d.retry_after.as_nanos() + 999_999) / 1_000_000;
    assert_eq!(
        d.body(),
        format!(
            "{{\"errcode\":\"M_LIMIT_EXCEEDED\",\"error\":\"Too many requests\",\"retry_after_ms\":{}}}",
            ms
        )
    );
    // The wait is exact.
    let wait = d.retry_after.as_nanos() as i64;
    assert!(!limiter.check(&login.at(t0 + wait - 1)).unwrap().allowed);
    assert!(limiter.check(&login.at(t0 + wait)).unwrap().allowed);
    // Exempt requests are not checked.
    let exempt = limiter.check(&login.at(t0 + wait).exempt(true)).unwrap();
    assert!(exempt.allowed && exempt.exempt);
}

#[test]
fn default_config_limits_message_send_per_user() {
    let limiter = Limiter::from_yaml("", "empty.yaml").unwrap();
    let send = |i: u32| {
        let target = format!(
            "/_matrix/client/v3/rooms/!r:x.org/send/m.room.message/t{}",
            i
        );
        let client = IpAddr::from([192, 0, 2, i as u8]);
        let r = Request::new("PUT", target.as_bytes(), client)
            .user("@bob:example.org")
            .at(0);
        let d = limiter.check(&r).unwrap();
        (d.allowed, d.limited_by, d.policy.to_string())
    };
    for i in 0..10 {
        assert!(send(i).0);
    }
    assert_eq!(send(10), (false, Scope::User, "message-send".to_string()));
}

#[test]
fn default_config_limits_joins_per_room() {
    let limiter = Limiter::from_yaml("", "empty.yaml").unwrap();
    let join = |i: u32| {
        let user = format!("@u{}:example.org", i);
        let client = IpAddr::from([192, 0, 2, i as u8]);
        let r = Request::new(
            "POST",
            b"/_matrix/client/v3/rooms/%21wave%3Ax.org/join",
            client,
        )
        .user(&user)
        .at(0);
        let d = limiter.check(&r).unwrap();
        (d.allowed, d.limited_by, d.policy.to_string())
    };
    for i in 0..10 {
        assert!(join(i).0);
    }
    assert_eq!(join(10), (false, Scope::Room, "joins-per-room".to_string()));
}

#[test]
fn origins_targets_and_delays() {
    let limiter = Limiter::from_yaml(
        "policies:\n  - name: fed\n    match: /_matrix/federation/*\n    scope: origin\n    share_threshold: true\n    rate_limit: { unit: minute, requests_per_unit: 1, burst: 1 }\n  - name: slow\n    match: /_matrix/client/v3/publicRooms\n    rate_limit: { unit: second, requests_per_unit: 10, burst: 1 }\n    on_limit: delay\n    max_delay: 500ms\n",
        "subjects.yaml",
    )
    .unwrap();
    let client = IpAddr::from([203, 0, 113, 5]);
    let fed = Request::new("GET", "/_matrix/federation/v1/version", client)
        .origin("matrix.org", false)
        .at(0);
    assert!(limiter.check(&fed).unwrap().allowed);
    let d = limiter.check(&fed).unwrap();
    assert_eq!(
        (d.allowed, d.limited_by, d.policy),
        (false, Scope::Origin, "fed")
    );
    // Verified: the name alone, a fresh bucket.
    assert!(
        limiter
            .check(&fed.origin("matrix.org", true))
            .unwrap()
            .allowed
    );

    let rooms = Request::new("GET", "/_matrix/client/v3/publicRooms", client)
        .may_delay(true)
        .at(0);
    assert_eq!(limiter.check(&rooms).unwrap().delay, Duration::ZERO);
    let d = limiter.check(&rooms).unwrap();
    assert!(d.allowed);
    assert_eq!(d.delay, Duration::from_millis(100));
    assert_eq!(d.policy, "slow");
    let d = limiter.check(&rooms.may_delay(false)).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.retry_after, Duration::from_millis(200));
}

#[test]
fn targets_are_bytes() {
    let limiter = Limiter::from_yaml("", "empty.yaml").unwrap();
    let target: &[u8] = b"/_matrix/client/v3/rooms/!\xff\xfe:x.org/send/m.room.message/1";
    let d = limiter
        .check(&Request::new("PUT", target, ip("2001:db8::1")).user("@a:x.org"))
        .unwrap();
    assert!(d.allowed);
    assert_eq!(
        d.route_key,
        "/_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}"
    );
}

const POLICIES: &str = "\
policies:
  - name: blocked
    match: /_matrix/client/v3/publicRooms
    rate_limit: { unit: minute, requests_per_unit: 0 }
  - name: sync-per-user
    match: /_matrix/client/v3/sync
    scope: user
    rate_limit: { unit: second, requests_per_unit: 1, burst: 2 }
";

#[test]
fn never_peek_and_charge() {
    let limiter = Limiter::from_yaml(POLICIES, "policies.yaml").unwrap();
    let blocked = limiter
        .check(&Request::new("GET", "/_matrix/client/v3/publicRooms", ip("192.0.2.1")).at(0))
        .unwrap();
    assert!(!blocked.allowed && blocked.never);
    assert_eq!(blocked.retry_after_header(), None);
    assert_eq!(
        blocked.body(),
        "{\"errcode\":\"M_LIMIT_EXCEEDED\",\"error\":\"Too many requests\"}"
    );

    let sync = Request::new("GET", "/_matrix/client/v3/sync?since=s1", ip("192.0.2.1"))
        .user("@u:x.org")
        .at(0);
    for _ in 0..5 {
        assert!(limiter.peek(&sync).unwrap().allowed);
    }
    limiter.charge(&sync.cost(2)).unwrap();
    let d = limiter.check(&sync).unwrap();
    assert!(!d.allowed);
    assert_eq!((d.limited_by, d.policy), (Scope::User, "sync-per-user"));
    assert_eq!(d.retry_after, Duration::from_secs(1));
    limiter.charge(&sync.cost(-2)).unwrap(); // a refund
    assert!(limiter.check(&sync).unwrap().allowed);
    // Check refuses a negative cost.
    let err = limiter.check(&sync.cost(-1)).unwrap_err();
    assert_eq!(err.code, sys::MXLIMIT_EINVAL);
}

#[test]
fn config_errors_name_every_line() {
    let text = "policies:\n  - name: a\n    match: /x\n    rate_limit: { unit: minutes, requests_per_unit: 1 }\n  - name: b\n    burts: 5\n";
    let err = Limiter::from_yaml(text, "bad.yaml").err().unwrap();
    assert_eq!(err.code, sys::MXLIMIT_EINVAL);
    assert_eq!(err.code_name(), "MXLIMIT_EINVAL");
    let lines: Vec<&str> = err.message.lines().collect();
    assert!(lines.len() >= 3, "{}", err.message);
    assert!(lines[0].starts_with("bad.yaml:4:"), "{}", err.message);
    assert!(
        lines.iter().all(|l| l.starts_with("bad.yaml:")),
        "{}",
        err.message
    );
    assert!(err.message.contains("did you mean \"minute\"?"));

    let missing = Limiter::from_file("/nonexistent/mxlimit.yaml")
        .err()
        .unwrap();
    assert_eq!(missing.code, sys::MXLIMIT_ENOTFOUND);
    assert!(missing.message.contains("/nonexistent/mxlimit.yaml"));
    assert!(missing.to_string().starts_with("MXLIMIT_ENOTFOUND: "));

    let shards = Limiter::from_yaml_with("", "x.yaml", &Options { shards: 3 })
        .err()
        .unwrap();
    assert_eq!(shards.code, sys::MXLIMIT_EINVAL);
    assert!(shards.message.contains("shards: got 3"));
}

fn sync_policy(name: &str) -> String {
    format!(
        "policies:\n  - name: {}\n    match: /_matrix/client/v3/sync\n    scope: user\n    rate_limit: {{ unit: minute, requests_per_unit: 1 }}\n",
        name
    )
}

#[test]
fn names_stay_valid_across_reloads_and_files_reload() {
    let dir = std::env::temp_dir().join(format!("mxlimit-rust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mxlimit.yaml");
    std::fs::write(&path, sync_policy("from-file")).unwrap();
    let limiter = Limiter::from_file(&path).unwrap();
    let sync = Request::new("GET", "/_matrix/client/v3/sync?since=s1", ip("192.0.2.1"))
        .user("@a:x.org")
        .at(0);
    limiter.check(&sync).unwrap();
    let before = limiter.check(&sync).unwrap();
    assert_eq!(before.policy, "from-file");

    for i in 0..50 {
        limiter
            .reload_yaml(&sync_policy(&format!("p-{}", i)), "r.yaml")
            .unwrap();
    }
    std::fs::write(&path, sync_policy("reloaded")).unwrap();
    limiter.reload_file(&path).unwrap();
    limiter.check(&sync).unwrap();
    assert_eq!(limiter.check(&sync).unwrap().policy, "reloaded");
    // Borrowed from the limiter, not from the policy set it came from.
    assert_eq!(before.policy, "from-file");

    // A broken file changes nothing.
    std::fs::write(&path, "policies: [").unwrap();
    let err = limiter.reload_file(&path).unwrap_err();
    assert_eq!(err.code, sys::MXLIMIT_EINVAL);
    assert_eq!(limiter.check(&sync).unwrap().policy, "reloaded");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn threads_share_one_limiter() {
    let burst = 50;
    let limiter = Arc::new(
        Limiter::from_yaml(
            &format!(
                "policies:\n  - name: per-user\n    match: /_matrix/client/v3/sync\n    scope: user\n    rate_limit: {{ unit: hour, requests_per_unit: 1, burst: {} }}\n",
                burst
            ),
            "threads.yaml",
        )
        .unwrap(),
    );
    let users: Vec<String> = (0..8).map(|u| format!("@u{}:example.org", u)).collect();
    let allowed: Arc<Vec<AtomicUsize>> = Arc::new((0..8).map(|_| AtomicUsize::new(0)).collect());
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let limiter = Arc::clone(&limiter);
            let allowed = Arc::clone(&allowed);
            let users = users.clone();
            thread::spawn(move || {
                for _ in 0..40 {
                    for (u, user) in users.iter().enumerate() {
                        let client = IpAddr::from([10, w as u8, u as u8, 1]);
                        let r = Request::new("GET", "/_matrix/client/v3/sync?since=s1", client)
                            .user(user)
                            .at(0);
                        let d = limiter.check(&r).unwrap();
                        if d.allowed {
                            allowed[u].fetch_add(1, Ordering::Relaxed);
                        } else {
                            assert_eq!(d.policy, "per-user");
                        }
                    }
                }
            })
        })
        .collect();
    let reloader = {
        let limiter = Arc::clone(&limiter);
        thread::spawn(move || {
            for i in 0..20 {
                let yaml = format!(
                    "policies:\n  - name: per-user\n    match: /_matrix/client/v3/sync\n    scope: user\n    rate_limit: {{ unit: hour, requests_per_unit: 1, burst: 50 }}\n  - name: extra-{}\n    match: /_matrix/client/v3/keys/query\n    rate_limit: {{ unit: minute, requests_per_unit: 5 }}\n",
                    i
                );
                limiter.reload_yaml(&yaml, "reload.yaml").unwrap();
                assert!(limiter.metrics_prometheus().unwrap().contains("per-user"));
            }
        })
    };
    for w in workers {
        w.join().unwrap();
    }
    reloader.join().unwrap();
    for count in allowed.iter() {
        // 160 attempts at one instant: exactly the burst passes.
        assert_eq!(count.load(Ordering::Relaxed), burst);
    }
}

#[test]
fn helpers() {
    assert_eq!(
        mxlimit::parse_ip("[2001:db8::1%eth0]").unwrap(),
        ip("2001:db8::1")
    );
    assert_eq!(
        mxlimit::parse_ip("::ffff:192.0.2.1").unwrap(),
        ip("192.0.2.1")
    );
    assert_eq!(
        mxlimit::parse_ip("010.0.0.1").unwrap_err().code,
        sys::MXLIMIT_EINVAL
    );
    let a = mxlimit::monotonic_now_ns();
    assert!(mxlimit::monotonic_now_ns() >= a);
    let limiter = Limiter::from_yaml("", "m.yaml").unwrap();
    let metrics = limiter.metrics_prometheus().unwrap();
    assert!(
        metrics.contains("mxlimit_table_size{table=\"ip\"}"),
        "{}",
        metrics
    );
}

#[test]
fn leases_are_released_and_end_by_themselves() {
    // The built-in initial-sync-in-flight: two initial syncs per user.
    let limiter = Limiter::from_yaml("", "empty.yaml").unwrap();
    let sync = Request::new("GET", "/_matrix/client/v3/sync", ip("203.0.113.9"))
        .user("@a:x.org")
        .at(0);
    let first = limiter.check(&sync).unwrap();
    assert!(first.allowed);
    assert_eq!(first.leases.ids().len(), 1);
    let first_leases = first.leases;
    assert!(limiter.check(&sync).unwrap().allowed);
    let d = limiter.check(&sync).unwrap();
    assert_eq!(
        (d.allowed, d.limited_by, d.policy),
        (false, Scope::User, "initial-sync-in-flight")
    );
    assert!(d.leases.is_empty());
    assert_eq!(d.retry_after, Duration::from_secs(180));
    // An incremental sync is not counted.
    let incremental =
        Request::new("GET", "/_matrix/client/v3/sync?since=s1", ip("203.0.113.9"))
            .user("@a:x.org")
            .at(0);
    assert!(limiter.check(&incremental).unwrap().allowed);
    limiter.release(&first_leases, 0).unwrap();
    assert!(limiter.check(&sync).unwrap().allowed);
    // Released twice: nothing changes.
    limiter.release(&first_leases, 0).unwrap();
    assert!(!limiter.check(&sync).unwrap().allowed);
    // After the lease time every lease has ended.
    let later = sync.at(181_000_000_000);
    assert!(limiter.check(&later).unwrap().allowed);
}
