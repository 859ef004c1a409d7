// The malformed store URLs of tests/data/malformed_store_urls.txt, each
// holding the password kStoreUrlPassword: every reader of a store URL (the
// YAML loader, mxlimitd's --store, `mxlimit replay --store`, the Redis
// store) must report them without that password.

#ifndef MXLIMIT_TESTS_TESTING_STORE_URL_SHAPES_H_
#define MXLIMIT_TESTS_TESTING_STORE_URL_SHAPES_H_

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace mxlimit::testing {

// What each URL of the list holds and no message may: "s3cr3t-PW" in most,
// "s3cr3t@PW" in one, so the test looks for the common part.
inline constexpr std::string_view kStoreUrlPassword = "s3cr3t";

// The list, plus shapes a text file cannot hold one per line (control
// bytes).
inline std::vector<std::string> MalformedStoreUrls() {
  std::vector<std::string> urls;
  std::ifstream in(MXLIMIT_SOURCE_DIR "/tests/data/malformed_store_urls.txt");
  EXPECT_TRUE(in.good()) << "cannot read malformed_store_urls.txt";
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() == '#') continue;
    urls.push_back(line);
  }
  EXPECT_GE(urls.size(), 20u);
  urls.push_back("redis://:s3cr3t-PW@h:1\n");
  urls.push_back("rediss://mx:s3cr3t-PW@h\t:1");
  urls.push_back("\x1b[31mredis://:s3cr3t-PW@h:1");
  urls.push_back(std::string("redis://:s3cr3t-PW\0@h:1", 24));
  return urls;
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_STORE_URL_SHAPES_H_
