// What happened to a request, through the binding: responses settled
// (the built-in failed-login-per-ip), request bytes, a policy's own Matrix
// error in the 429 body, and the RateLimit header fields.

use std::net::IpAddr;
use std::time::Duration;

use mxlimit::{Limiter, QuotaUnit, Request, Scope};

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn default_config_denies_after_three_failed_logins_settled() {
    let limiter = Limiter::from_yaml("", "empty.yaml").unwrap(); // built-ins
    let login = Request::new("POST", "/_matrix/client/v3/login", ip("203.0.113.50"))
        .request_bytes(80)
        .at(0);
    for _ in 0..3 {
        let d = limiter.check(&login).unwrap();
        assert!(d.allowed);
        assert!(d.settles);
        assert_eq!(d.errcode, "");
        limiter.settle(&login, 403, 60).unwrap();
    }
    // Successful logins from another address cost nothing on the response.
    let other = Request::new("POST", "/_matrix/client/v3/login", ip("198.51.100.9")).at(0);
    for _ in 0..4 {
        assert!(limiter.check(&other).unwrap().allowed);
        limiter.settle(&other, 200, 300).unwrap();
    }
    let d = limiter.check(&login).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.limited_by, Scope::Ip);
    assert_eq!(d.policy, "failed-login-per-ip");
    assert_eq!(d.errcode, "M_LIMIT_EXCEEDED");
    assert_eq!(d.info_uri, "");
    assert_eq!(d.can_upgrade, None);
    assert_eq!(d.retry_after, Duration::from_nanos(3_600_000_000_000 / 612));
    assert_eq!(d.quota.policy, "failed-login-per-ip");
    assert_eq!(d.quota.unit, QuotaUnit::Requests);
    assert_eq!(d.quota.burst, 3);
    let ms = (d.retry_after.as_nanos() + 999_999) / 1_000_000;
    assert_eq!(
        d.body(),
        format!(
            "{{\"errcode\":\"M_LIMIT_EXCEEDED\",\"error\":\"Too many requests\",\"retry_after_ms\":{}}}",
            ms
        )
    );
    // The fields are formatted whether or not the file asks for them.
    let (policy, limit) = d.ratelimit_headers().unwrap();
    assert_eq!(policy, "\"failed-login-per-ip\";q=3;w=18");
    assert_eq!(limit, "\"failed-login-per-ip\";r=0;t=6");
}

const UPLOAD_QUOTA: &str = r#"
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
"#;

#[test]
fn upload_quota_answers_m_user_limit_exceeded() {
    let limiter = Limiter::from_yaml(UPLOAD_QUOTA, "quota.yaml").unwrap();
    let mib = 1_048_576;
    let upload = Request::new(
        "POST",
        "/_matrix/media/v3/upload?filename=a",
        ip("192.0.2.1"),
    )
    .user("@uploader:example.org")
    .at(0);
    let d = limiter.check(&upload.request_bytes(60 * mib)).unwrap();
    assert!(d.allowed);
    // Charged its bytes at the decision: its completion has nothing to add.
    assert!(!d.settles);
    assert!(d.ratelimit_headers().is_some());

    let d = limiter.check(&upload.request_bytes(50 * mib)).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.limited_by, Scope::User);
    assert_eq!(d.policy, "upload-quota");
    assert_eq!(d.errcode, "M_USER_LIMIT_EXCEEDED");
    assert_eq!(d.info_uri, "https://example.org/fair-use");
    assert_eq!(d.can_upgrade, Some(true));
    assert_eq!(d.quota.unit, QuotaUnit::ContentBytes);
    assert_eq!(d.quota.burst, 104_857_600);
    let ms = (d.retry_after.as_nanos() + 999_999) / 1_000_000;
    assert_eq!(
        d.body(),
        format!(
            "{{\"errcode\":\"M_USER_LIMIT_EXCEEDED\",\"error\":\"Too many requests\",\
             \"retry_after_ms\":{},\"info_uri\":\"https://example.org/fair-use\",\
             \"can_upgrade\":true}}",
            ms
        )
    );
    let (policy, limit) = d.ratelimit_headers().unwrap();
    assert_eq!(
        policy,
        "\"upload-quota\";q=104857600;qu=\"content-bytes\";w=3600"
    );
    assert_eq!(limit, "\"upload-quota\";r=0;t=360");

    // Another user is untouched; an exempt request has no fields to send.
    let other = upload.user("@other:example.org").request_bytes(mib);
    assert!(limiter.check(&other).unwrap().allowed);
    let exempt = limiter.check(&upload.exempt(true)).unwrap();
    assert!(exempt.exempt);
    assert_eq!(exempt.ratelimit_headers(), None);
}

#[test]
fn settle_charges_response_bytes_for_listed_statuses() {
    let limiter = Limiter::from_yaml(
        "policies:\n\
         \x20 - name: thumb-bytes\n\
         \x20   match: /_matrix/client/v1/media/thumbnail/*\n\
         \x20   cost: response_bytes\n\
         \x20   status: [200]\n\
         \x20   rate_limit: { unit: second, requests_per_unit: 1000, burst: 10000 }\n",
        "thumb.yaml",
    )
    .unwrap();
    let thumb = Request::new(
        "GET",
        "/_matrix/client/v1/media/thumbnail/example.org/abc",
        ip("192.0.2.7"),
    )
    .at(0);
    assert!(limiter.check(&thumb).unwrap().settles);
    limiter.settle(&thumb, 404, 15_000).unwrap();
    assert!(limiter.check(&thumb).unwrap().allowed);
    limiter.settle(&thumb, 200, 15_000).unwrap();
    let d = limiter.check(&thumb).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.policy, "thumb-bytes");
    assert!(d.retry_after > Duration::from_secs(5));
}
