#include <string_view>

#include "gtest/gtest.h"
#include "mxlimit/request.h"

namespace mxlimit {
namespace {

TEST(OriginFormTest, AbsoluteFormLosesSchemeAndAuthority) {
  EXPECT_EQ(OriginForm("http://matrix.example.org/_matrix/client/v3/login"),
            "/_matrix/client/v3/login");
  EXPECT_EQ(OriginForm("HTTPS://h:8448/_matrix/key/v2/server?x=1"),
            "/_matrix/key/v2/server?x=1");
  EXPECT_EQ(OriginForm("http://[2001:db8::1]:80/x"), "/x");
  EXPECT_EQ(OriginForm("hTtP://h/"), "/");
}

TEST(OriginFormTest, EverythingElseIsReturnedAsItIs) {
  EXPECT_EQ(OriginForm("/_matrix/client/versions"), "/_matrix/client/versions");
  EXPECT_EQ(OriginForm("*"), "*");
  EXPECT_EQ(OriginForm("http://h"), "http://h");
  EXPECT_EQ(OriginForm("http://h?x=/y"), "http://h?x=/y");
  EXPECT_EQ(OriginForm("http://h#/y"), "http://h#/y");
  EXPECT_EQ(OriginForm("ftp://h/x"), "ftp://h/x");
  EXPECT_EQ(OriginForm("matrix.example.org:443"), "matrix.example.org:443");
  EXPECT_EQ(OriginForm(""), "");
}

}  // namespace
}  // namespace mxlimit
