// BM_Limiter_Check's clients (bench/limiter_bench.cc), shared with
// bench/before_after's driver, which is compiled against older trees too and
// so includes nothing of the library here: the address type is a parameter.
#ifndef MXLIMIT_BENCH_CLIENT_WORKLOAD_H_
#define MXLIMIT_BENCH_CLIENT_WORKLOAD_H_

#include <cstdint>

namespace mxlimit_bench {

inline constexpr const char* kClientTargets[] = {
    "/_matrix/client/v3/sync?since=s72594_4483_1934&timeout=30000",
    "/_matrix/client/v3/sync?since=s72594_4483_1935&timeout=30000",
    // An incremental sync, as nearly every client sync is (an initial sync
    // meets initial-sync-in-flight, which BM_Limiter_Concurrency measures).
    "/_matrix/client/r0/sync?since=s72594_4483_1936&timeout=30000",
    "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/send/"
    "m.room.message/m1712345678.1",
    "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/receipt/"
    "m.read/%24eventid123",
    "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/typing/"
    "%40alice%3Aexample.org",
    "/_matrix/client/v3/rooms/!abc%3Aexample.org/state/m.room.member/"
    "%40alice%3Aexample.org",
    "/_matrix/client/v3/keys/query",
    "/_matrix/client/v1/media/download/matrix.org/AbCdEfGh123",
    "/_matrix/media/v3/thumbnail/matrix.org/XyZ987?width=96&height=96",
    "/_matrix/federation/v1/send/1712345678901",
    "/_matrix/client/v3/pushrules/",
};

// Client `i`'s address: 2001:db8:<i>::1, one /64 per client.
template <typename IpAddress>
IpAddress ClientAddress(uint64_t i) {
  IpAddress ip;
  ip.bytes[0] = 0x20;
  ip.bytes[1] = 0x01;
  ip.bytes[2] = 0x0d;
  ip.bytes[3] = 0xb8;
  for (int b = 0; b < 4; ++b)
    ip.bytes[4 + b] = static_cast<uint8_t>(i >> (24 - 8 * b));
  ip.bytes[15] = 1;
  return ip;
}

}  // namespace mxlimit_bench

#endif  // MXLIMIT_BENCH_CLIENT_WORKLOAD_H_
