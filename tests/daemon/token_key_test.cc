#include "src/daemon/token_key.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "mxlimit/user_id.h"

namespace mxlimit::daemon {
namespace {

std::string TempDir() {
  char dir[] = "/tmp/mxlimitd_key_XXXXXX";
  return mkdtemp(dir);
}

TEST(TokenKeyTest, UserIdIsWellFormedStableAndKeyed) {
  const internal::SipKey a{1, 2};
  const internal::SipKey b{1, 3};
  const TokenUserId id = TokenHashUserId(a, "syt_YWxpY2U_secret");
  const std::string_view v = id.view();
  EXPECT_EQ(v.size(), 32u);
  EXPECT_EQ(v.substr(0, 2), "@t");
  EXPECT_EQ(v.substr(24), ":mxlimit");
  EXPECT_TRUE(IsWellFormedUserId(v)) << UserIdProblem(v);
  EXPECT_EQ(v.find("secret"), std::string_view::npos);
  EXPECT_EQ(TokenHashUserId(a, "syt_YWxpY2U_secret").view(), v);
  EXPECT_NE(TokenHashUserId(b, "syt_YWxpY2U_secret").view(), v);
  EXPECT_NE(TokenHashUserId(a, "syt_YWxpY2U_secreu").view(), v);
}

TEST(TokenKeyTest, SecretIsCreatedOnceWithMode0600AndKept) {
  const std::string path = TempDir() + "/mxlimitd.secret";
  absl::StatusOr<internal::SipKey> first = LoadOrCreateSecret(path);
  ASSERT_TRUE(first.ok()) << first.status();
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  absl::StatusOr<internal::SipKey> again = LoadOrCreateSecret(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->k0, again->k0);
  EXPECT_EQ(first->k1, again->k1);
  // A restart keeps every token's user.
  EXPECT_EQ(TokenHashUserId(*first, "t").view(),
            TokenHashUserId(*again, "t").view());
}

TEST(TokenKeyTest, MalformedOrUnwritableSecretIsAClearError) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/bad") << "not hex at all\n";
  absl::StatusOr<internal::SipKey> bad = LoadOrCreateSecret(dir + "/bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(dir + "/bad"), std::string::npos);
  absl::StatusOr<internal::SipKey> missing_dir =
      LoadOrCreateSecret(dir + "/no/such/dir/secret");
  ASSERT_FALSE(missing_dir.ok());
  EXPECT_NE(missing_dir.status().message().find("--secret-file"),
            std::string::npos);
}

TEST(TokenKeyTest, SecretThatIsNoRegularFileIsRefusedAtOnce) {
  // A FIFO would block a plain read until a writer came; /dev/zero would
  // never end. Both are refused at once, naming the path and what is wrong.
  const std::string dir = TempDir();
  const std::string fifo = dir + "/secret.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    absl::StatusOr<internal::SipKey> key = LoadOrCreateSecret(path);
    ASSERT_FALSE(key.ok()) << path;
    EXPECT_NE(key.status().message().find(path), std::string::npos);
    EXPECT_NE(key.status().message().find("not a regular file"),
              std::string::npos)
        << key.status();
  }
  // A huge regular file is refused after its first few KiB.
  const std::string huge = dir + "/huge.secret";
  std::ofstream(huge) << std::string(1 << 20, 'a');
  absl::StatusOr<internal::SipKey> key = LoadOrCreateSecret(huge);
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("4096 bytes"), std::string::npos)
      << key.status();
  // And a valid secret next to them still loads.
  absl::StatusOr<internal::SipKey> good =
      LoadOrCreateSecret(dir + "/good.secret");
  EXPECT_TRUE(good.ok()) << good.status();
}

}  // namespace
}  // namespace mxlimit::daemon
