// Fuzz target: restoring snapshot files (mxlimit/snapshot.h), which a
// restart reads from mxlimitd's --state-dir.
//
// The first byte picks the mode: even, the rest is the file as it is; odd,
// a real snapshot (of a limiter that served requests chosen by the input)
// with input bytes XORed in at input-chosen places. Invariants:
//   * Restore never crashes and either succeeds or fails with DataLoss or
//     FailedPrecondition;
//   * a failed restore changes nothing (the table sizes stay as they were);
//   * a successful one leaves every table within its capacity, and the
//     limiter answers a request afterwards;
//   * the unmutated snapshot restores, and the restored limiter's own
//     snapshot restores again.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "mxlimit/limiter.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_input.h"

namespace mxlimit::fuzz {
namespace {

const WallTime kFuzzWall = WallTime(std::chrono::hours(24 * 20000));

LimiterConfig SmallConfig() {
  LimiterConfig config;  // built-ins on
  config.tables.ip_capacity = 64;
  config.tables.user_capacity = 64;
  config.tables.origin_capacity = 16;
  config.tables.room_capacity = 16;
  config.tables.target_capacity = 16;
  return config;
}

Request FuzzRequest(FuzzInput& in) {
  static const char* const kTargets[] = {
      "/_matrix/client/v3/login",
      "/_matrix/client/v3/rooms/!r%3Ax/send/m.room.message/t",
      "/_matrix/client/v3/join/!r%3Ax",
      "/_matrix/federation/v1/send/t1",
  };
  Request r;
  r.method = "POST";
  r.target = kTargets[in.Byte() % 4];
  r.client.bytes = {0, 0, 0,    0,    0,  0, 0,         0,
                    0, 0, 0xff, 0xff, 10, 0, in.Byte(), in.Byte()};
  static const char* const kUsers[] = {
      "", "@a:x", "@b:x", "@aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:x"};
  r.user_id = kUsers[in.Byte() % 4];
  return r;
}

void CheckBounded(const Limiter& limiter) {
  const LimiterStats s = limiter.Stats();
  MXLIMIT_FUZZ_CHECK(s.ip_table.size <= s.ip_table.capacity);
  MXLIMIT_FUZZ_CHECK(s.user_table.size <= s.user_table.capacity);
  MXLIMIT_FUZZ_CHECK(s.origin_table.size <= s.origin_table.capacity);
  MXLIMIT_FUZZ_CHECK(s.room_table.size <= s.room_table.capacity);
  MXLIMIT_FUZZ_CHECK(s.target_table.size <= s.target_table.capacity);
}

void TryRestore(const std::string& bytes) {
  auto limiter = *Limiter::Create(SmallConfig());
  Request login;
  login.method = "POST";
  login.target = "/_matrix/client/v3/login";
  limiter->Check(login, MonotonicTime::FromNanoseconds(1));
  const LimiterStats before = limiter->Stats();
  std::istringstream in(bytes);
  absl::StatusOr<RestoreStats> r = limiter->Restore(
      in, MonotonicTime::FromNanoseconds(2'000'000'000), kFuzzWall);
  if (!r.ok()) {
    MXLIMIT_FUZZ_CHECK(r.status().code() == absl::StatusCode::kDataLoss ||
                       r.status().code() ==
                           absl::StatusCode::kFailedPrecondition);
    const LimiterStats after = limiter->Stats();
    MXLIMIT_FUZZ_CHECK(after.ip_table.size == before.ip_table.size);
    MXLIMIT_FUZZ_CHECK(after.user_table.size == before.user_table.size);
    return;
  }
  CheckBounded(*limiter);
  Request versions;
  versions.method = "GET";
  versions.target = "/_matrix/client/versions";
  limiter->Check(versions, MonotonicTime::FromNanoseconds(2'000'000'000));
}

}  // namespace
}  // namespace mxlimit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxlimit;
  using namespace mxlimit::fuzz;
  FuzzInput in(data, size);
  if ((in.Byte() & 1) == 0) {
    TryRestore(std::string(in.Rest()));
    return 0;
  }
  auto limiter = *Limiter::Create(SmallConfig());
  const int requests = in.Byte() % 64;
  for (int i = 0; i < requests; ++i) {
    limiter->Check(FuzzRequest(in), MonotonicTime::FromNanoseconds(1'000));
  }
  std::ostringstream out;
  MXLIMIT_FUZZ_CHECK(
      limiter->Snapshot(out, MonotonicTime::FromNanoseconds(1'000), kFuzzWall)
          .ok());
  std::string bytes = out.str();
  {
    auto again = *Limiter::Create(SmallConfig());
    std::istringstream clean(bytes);
    MXLIMIT_FUZZ_CHECK(
        again->Restore(clean, MonotonicTime::FromNanoseconds(5), kFuzzWall)
            .ok());
    CheckBounded(*again);
    std::ostringstream second;
    MXLIMIT_FUZZ_CHECK(
        again->Snapshot(second, MonotonicTime::FromNanoseconds(5), kFuzzWall)
            .ok());
    auto third = *Limiter::Create(SmallConfig());
    std::istringstream second_in(second.str());
    MXLIMIT_FUZZ_CHECK(
        third->Restore(second_in, MonotonicTime::FromNanoseconds(9), kFuzzWall)
            .ok());
  }
  while (in.remaining() >= 3 && !bytes.empty()) {
    const size_t at = in.Int<uint16_t>() % bytes.size();
    bytes[at] = static_cast<char>(bytes[at] ^ in.Byte());
  }
  TryRestore(bytes);
  return 0;
}
