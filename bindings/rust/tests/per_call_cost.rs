// Prints the cost of one check through the Rust binding on the workload of
// bench/c_api_bench.cc at 1k buckets per table (informational: the bench
// holds the C ABI to its budget against the C++ API; this shows what Rust
// adds). The workload, in every language alike: the built-in policies,
// tables of N buckets, N clients (client c at 2001:db8:CCCC:CC00::1 with user
// "@u<c>:example.org"), request i by client splitmix64(i) % N to one of eight
// targets chosen by the high half, one millisecond apart.

use std::net::{IpAddr, Ipv6Addr};
use std::time::Instant;

use mxlimit::{Limiter, Request};

const TARGETS: [(&str, &str); 8] = [
    ("GET", "/_matrix/client/v3/sync?since=s72594_4483_1934&timeout=30000"),
    ("GET", "/_matrix/client/r0/sync?timeout=30000"),
    ("PUT", "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/send/m.room.message/m1712345678.1"),
    ("POST", "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/receipt/m.read/%24eventid123"),
    ("POST", "/_matrix/client/v3/keys/query"),
    ("GET", "/_matrix/client/v1/media/download/matrix.org/AbCdEfGh123"),
    ("PUT", "/_matrix/federation/v1/send/1712345678901"),
    ("GET", "/_matrix/client/v3/pushrules/"),
];

fn splitmix64(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn per_call_cost_at_1k_buckets() {
    const N: u64 = 1024;
    const CALLS: u64 = 200_000;
    let yaml = format!(
        "tables:\n  ip: {{ capacity: {} }}\n  user: {{ capacity: {} }}\n",
        N, N
    );
    let limiter = Limiter::from_yaml(&yaml, "bench.yaml").unwrap();
    let users: Vec<String> = (0..N).map(|c| format!("@u{}:example.org", c)).collect();
    let clients: Vec<IpAddr> = (0..N)
        .map(|c| {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            b[4] = (c >> 16) as u8;
            b[5] = (c >> 8) as u8;
            b[6] = c as u8;
            b[15] = 1;
            IpAddr::V6(Ipv6Addr::from(b))
        })
        .collect();
    let request = |i: u64| {
        let x = splitmix64(i);
        let c = (x % N) as usize;
        let (method, target) = TARGETS[((x >> 32) % 8) as usize];
        // Built field by field: Request::new would also read the clock.
        Request {
            method,
            target: target.as_bytes(),
            client: clients[c],
            user_id: &users[c],
            cost: 1,
            exempt: false,
            origin: "",
            origin_verified: false,
            target_user: "",
            may_delay: false,
            request_bytes: -1,
            now_ns: i as i64 * 1_000_000,
        }
    };
    // Warm up: every client seen, the tables full.
    let mut allowed = 0u64;
    for i in 0..N * 4 {
        allowed += limiter.check(&request(i)).unwrap().allowed as u64;
    }
    let start = Instant::now();
    for i in N * 4..N * 4 + CALLS {
        allowed += limiter.check(&request(i)).unwrap().allowed as u64;
    }
    let ns = start.elapsed().as_nanos() as f64 / CALLS as f64;
    println!(
        "rust: Limiter::check {:.0} ns/call over {} calls (1k buckets per table; {:.0}% allowed)",
        ns,
        CALLS,
        100.0 * allowed as f64 / (N * 4 + CALLS) as f64
    );
    assert!(allowed > 0);
}
