// Fuzz target: mxlimitd's request-head parser and what a decision reads from
// a head (src/http/request_head.h, src/daemon/request_inputs.h).
//
// The input is a byte stream as a client would send it. Invariants:
//   * FindHeadEnd gives the same answer whatever prefix was searched before
//     (so reads split anywhere parse alike), and the end lies inside the
//     input, just past a blank line;
//   * a complete head's method, target and fields are views inside the
//     input, names are tokens, values hold no CR, LF or NUL, the target has
//     no blank, and Field() finds every field by its own name;
//   * an error carries an HTTP status from the documented set and a reason;
//   * ReadOriginalRequest on a complete head, as each proxy protocol, from a
//     trusted and from an untrusted peer, either fails with a message or
//     yields a method, an origin-form target, and a token and user ID that
//     are views of the head or of their decode buffers; an untrusted peer is
//     always its own client.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mxlimit/ip.h"
#include "src/daemon/request_inputs.h"
#include "src/http/request_head.h"
#include "tests/fuzz/fuzz_check.h"

namespace mxlimit::fuzz {
namespace {

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() &&
          part.data() + part.size() <= whole.data() + whole.size());
}

void CheckInputsOf(daemon::CheckProtocol protocol,
                   const http::HttpRequestHead& head, std::string_view parsed,
                   const IpAddress& peer, std::span<const Cidr> trusted,
                   bool peer_trusted);

// Every proxy protocol, on the same head.
void CheckInputs(const http::HttpRequestHead& head, std::string_view parsed,
                 const IpAddress& peer, std::span<const Cidr> trusted,
                 bool peer_trusted) {
  for (daemon::CheckProtocol protocol :
       {daemon::CheckProtocol::kAuthRequest,
        daemon::CheckProtocol::kForwardAuth, daemon::CheckProtocol::kEnvoy}) {
    CheckInputsOf(protocol, head, parsed, peer, trusted, peer_trusted);
  }
}

void CheckInputsOf(daemon::CheckProtocol protocol,
                   const http::HttpRequestHead& head, std::string_view parsed,
                   const IpAddress& peer, std::span<const Cidr> trusted,
                   bool peer_trusted) {
  daemon::OriginalRequest out;
  std::string_view error;
  if (!daemon::ReadOriginalRequest(head, protocol, peer, trusted, out, error,
                                   head.target)) {
    MXLIMIT_FUZZ_CHECK(!error.empty());
    return;
  }
  MXLIMIT_FUZZ_CHECK(!out.method.empty() && out.method.size() <= 32);
  MXLIMIT_FUZZ_CHECK(!out.target.empty() && out.target.front() == '/');
  // Decoded values live in their buffers; values that could not be decoded
  // are the raw text of the head.
  auto within = [&](std::string_view v, const auto& buffer) {
    return Inside(v, parsed) ||
           Inside(v, std::string_view(buffer.data(), buffer.size()));
  };
  MXLIMIT_FUZZ_CHECK(within(out.access_token, out.token_buffer));
  MXLIMIT_FUZZ_CHECK(within(out.masquerade_user_id, out.user_id_buffer));
  if (!peer_trusted) MXLIMIT_FUZZ_CHECK(out.client == peer);
}

}  // namespace
}  // namespace mxlimit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxlimit;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  const size_t end = http::FindHeadEnd(input, 0);
  for (size_t from : {size / 3, size / 2, size - (size > 0 ? 1 : 0)}) {
    const size_t split = http::FindHeadEnd(input.substr(0, from), 0) != 0
                             ? 0  // the end lies before the split: search all
                             : from;
    MXLIMIT_FUZZ_CHECK(http::FindHeadEnd(input, split) == end);
  }
  if (end != 0) {
    MXLIMIT_FUZZ_CHECK(end <= size && input[end - 1] == '\n');
  }

  static http::HttpRequestHead head;
  const http::HeadParse p = http::ParseRequestHead(input, head);
  if (p.state == http::HeadParse::kError) {
    MXLIMIT_FUZZ_CHECK(!p.reason.empty());
    MXLIMIT_FUZZ_CHECK(p.status == 400 || p.status == 414 || p.status == 431 ||
                       p.status == 501 || p.status == 505);
    return 0;
  }
  if (p.state == http::HeadParse::kIncomplete) return 0;
  MXLIMIT_FUZZ_CHECK(p.head_bytes <= size);
  const std::string_view parsed = input.substr(0, p.head_bytes);
  MXLIMIT_FUZZ_CHECK(fuzz::Inside(head.method, parsed) && !head.method.empty());
  MXLIMIT_FUZZ_CHECK(fuzz::Inside(head.target, parsed) && !head.target.empty());
  MXLIMIT_FUZZ_CHECK(head.target.size() <= http::kMaxTargetBytes);
  for (char c : head.target) MXLIMIT_FUZZ_CHECK(c > ' ' && c < 0x7F);
  MXLIMIT_FUZZ_CHECK(head.field_count <= http::kMaxHeaderFields);
  for (size_t i = 0; i < head.field_count; ++i) {
    const http::HttpHeaderField& f = head.fields[i];
    MXLIMIT_FUZZ_CHECK(fuzz::Inside(f.name, parsed) && !f.name.empty());
    MXLIMIT_FUZZ_CHECK(fuzz::Inside(f.value, parsed));
    for (char c : f.name) MXLIMIT_FUZZ_CHECK(c > ' ' && c != ':' && c < 0x7F);
    for (char c : f.value) {
      MXLIMIT_FUZZ_CHECK(c != '\r' && c != '\n' && c != '\0');
    }
    bool found = false;
    head.Field(f.name, &found);
    MXLIMIT_FUZZ_CHECK(found);
  }

  static const Cidr trusted[] = {*ParseCidr("127.0.0.1/32"),
                                 *ParseCidr("10.0.0.0/8")};
  fuzz::CheckInputs(head, parsed, *ParseIpAddress("127.0.0.1"), trusted, true);
  fuzz::CheckInputs(head, parsed, *ParseIpAddress("192.0.2.7"), trusted, false);
  return 0;
}
