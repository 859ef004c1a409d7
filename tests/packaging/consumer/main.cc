// Built against an installed mxlimit: proves the headers, the library and the
// package config file work together outside the source tree.
#include <cstdio>

#include "mxlimit/rate.h"
#include "mxlimit/version.h"

int main() {
  auto rate = mxlimit::Rate::Create(2, mxlimit::TimeUnit::kSecond);
  if (!rate.ok()) return 1;
  mxlimit::GcraState bucket;
  auto now = mxlimit::MonotonicTime::FromNanoseconds(0);
  bool first = mxlimit::GcraCheck(*rate, bucket, now).allowed;
  bool second = mxlimit::GcraCheck(*rate, bucket, now).allowed;
  bool third = mxlimit::GcraCheck(*rate, bucket, now).allowed;
  if (!first || !second || third) return 1;
  if (mxlimit::LinkedVersion() != mxlimit::kVersion) return 1;
  std::printf("consumer OK, mxlimit %s\n", mxlimit::kVersion.data());
  return 0;
}
