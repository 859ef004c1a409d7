// Proves that the bucket tables, their keys and the 429 writers never
// allocate after construction. This binary replaces the global operator new
// to count allocations, so it is kept apart from the other tests.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "mxlimit/matrix_response.h"
#include "src/engine/bucket_keys.h"
#include "src/engine/bucket_table.h"
#include "tests/testing/counting_new.h"

namespace mxlimit::internal {
namespace {

long Allocations() { return ::mxlimit::testing::AllocationCount(); }

IpBucketKey IpKey(uint64_t id) {
  IpBucketKey k;
  for (int i = 0; i < 8; ++i)
    k.address[i] = static_cast<uint8_t>(id >> (8 * i));
  k.policy = static_cast<PolicyId>(id & 7);
  return k;
}

TEST(BucketTableAllocTest, CountingOperatorNewSeesAllocations) {
  const long before = Allocations();
  auto* p = new BucketTable<IpBucketKey>(10);
  EXPECT_GT(Allocations(), before);  // The counter works.
  delete p;
  // Every block a table owns is seen: the over-aligned 64-byte user records
  // and, for large tables, the huge-page slab and index.
  for (size_t capacity : {size_t{10}, size_t{200'000}}) {
    const long start = Allocations();
    { BucketTable<UserBucketKey, BucketKeyHash> t(capacity); }
    EXPECT_EQ(Allocations() - start, 2) << capacity;  // slab + index
  }
}

// Churn: admissions at capacity, hits, misses, erasures, a clear. Enough
// operations per table for the abseil index to fill with tombstones and
// rehash in place many times over.
template <typename Key, typename MakeKey>
void ExpectChurnDoesNotAllocate(size_t capacity, MakeKey make_key) {
  SCOPED_TRACE(::testing::Message() << "capacity " << capacity);
  BucketTable<Key> table(capacity);
  std::mt19937_64 rng(capacity);
  const uint64_t universe = 3 * capacity + 2;
  const long ops = static_cast<long>(std::max<size_t>(40 * capacity, 20'000));
  const size_t bytes = table.memory_bytes();
  const long before = Allocations();
  for (long i = 0; i < ops; ++i) {
    const Key key = make_key(rng() % universe);
    switch (rng() % 8) {
      case 0:
        table.Erase(key);
        break;
      case 1:
        table.Find(key);
        break;
      default:
        table.FindOrAdmit(key)->tat = i;
    }
    if (i == ops / 2) table.Clear();
  }
  // Distinct-key flood: every operation evicts.
  for (uint64_t i = 0; i < 4 * capacity + 100; ++i) {
    table.FindOrAdmit(make_key(universe + i));
  }
  EXPECT_EQ(Allocations(), before);
  EXPECT_EQ(table.size(), capacity);
  EXPECT_EQ(table.memory_bytes(), bytes);
}

TEST(BucketTableAllocTest, IpTableNeverAllocatesAfterConstruction) {
  for (size_t capacity : {1, 2, 3, 16, 17, 100, 1000, 25'000, 100'000}) {
    ExpectChurnDoesNotAllocate<IpBucketKey>(capacity, IpKey);
  }
}

TEST(BucketTableAllocTest, UserTableNeverAllocatesIncludingKeyBuilding) {
  const SipKey secret{7, 11};
  // Built before counting: the IDs are the caller's strings.
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    std::string id = "@user" + std::to_string(i) + ":example.org";
    if (i % 3 == 0) id = "@" + std::string(60 + i % 100, 'l') + id.substr(1);
    if (i % 17 == 0) id = "malformed " + id;
    ids.push_back(std::move(id));
  }
  auto make = [&](uint64_t n) {
    return UserBucketKey::Make(
        ids[n % ids.size()], static_cast<PolicyId>(n / ids.size()), 0, secret);
  };
  for (size_t capacity : {1, 7, 500, 5000}) {
    ExpectChurnDoesNotAllocate<UserBucketKey>(capacity, make);
  }
}

TEST(BucketTableAllocTest, ResponseWritersDoNotAllocate) {
  char body[kLimitExceededBodyMaxBytes];
  char value[kRetryAfterValueMaxBytes];
  const long before = Allocations();
  size_t n = 0;
  for (int64_t ms : {0, 1, 999, 123456789}) {
    n += WriteLimitExceededBody(std::chrono::milliseconds(ms), false, body);
    n += WriteLimitExceededBody(std::chrono::milliseconds(ms), true, body);
    n += WriteRetryAfterValue(std::chrono::milliseconds(ms), false, value);
  }
  EXPECT_EQ(Allocations(), before);
  EXPECT_GT(n, 0u);
}

}  // namespace
}  // namespace mxlimit::internal
