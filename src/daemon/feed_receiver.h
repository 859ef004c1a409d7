// -----------------------------------------------------------------------------
// File: daemon/feed_receiver.h
// -----------------------------------------------------------------------------
//
// mxlimitd's completion feed: the datagram sockets the proxy streams its
// access log to (`--feed unix:PATH`, `--feed udp:127.0.0.1:PORT`), read on
// one thread of their own and handed to a FeedSink. Receive buffers are
// allocated once; a datagram longer than one is dropped and counted, and
// datagrams the kernel dropped on a full UDP socket are counted from
// SO_RXQ_OVFL. docs/mxlimitd.md "The completion feed" is the operator's view.
//
// Example:
//   absl::StatusOr<mxlimit::daemon::FeedAddress> at =
//       mxlimit::daemon::ParseFeedAddress("unix:/run/mxlimitd/feed.sock");
//   absl::StatusOr<std::unique_ptr<mxlimit::daemon::FeedReceiver>> feed =
//       mxlimit::daemon::FeedReceiver::Start({*at}, sink);

#ifndef MXLIMIT_DAEMON_FEED_RECEIVER_H_
#define MXLIMIT_DAEMON_FEED_RECEIVER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "src/daemon/feed_sink.h"

namespace mxlimit::daemon {

struct FeedAddress {
  enum class Kind : uint8_t { kUnix, kUdp };
  Kind kind = Kind::kUnix;
  // kUnix: the socket's path (at most 107 bytes).
  std::string path;
  // kUdp: a loopback address (127.0.0.0/8 or ::1) and a port (0: any).
  std::string host;
  uint16_t port = 0;
};

// "unix:PATH" or "udp:HOST:PORT" ("udp:[::1]:PORT" for IPv6). A UDP feed
// listens on loopback only: whoever can send it datagrams can end leases
// early (given an id), so it never faces the network.
absl::StatusOr<FeedAddress> ParseFeedAddress(std::string_view text);

class FeedReceiver {
 public:
  // Longest datagram read; longer ones are counted and dropped.
  static constexpr size_t kMaxDatagramBytes = 65536;

  // Binds every address (a unix socket's path is created with mode 0660; a
  // stale socket file there is replaced; a socket another process serves,
  // or any other file, is an error) and starts the reading thread. `sink`
  // is borrowed.
  static absl::StatusOr<std::unique_ptr<FeedReceiver>> Start(
      std::span<const FeedAddress> addresses, FeedSink& sink);

  FeedReceiver(const FeedReceiver&) = delete;
  FeedReceiver& operator=(const FeedReceiver&) = delete;
  // Stops the thread, closes the sockets and removes their files.
  ~FeedReceiver();

  // Each address as bound ("unix:/run/x.sock", "udp:127.0.0.1:40000").
  const std::vector<std::string>& bound() const { return bound_; }

  uint64_t datagrams() const {
    return datagrams_.load(std::memory_order_relaxed);
  }
  uint64_t oversized() const {
    return oversized_.load(std::memory_order_relaxed);
  }
  // Datagrams the kernel dropped because a socket's queue was full.
  uint64_t dropped() const;

 private:
  struct Socket {
    int fd = -1;
    bool udp = false;
    // Whether the reader may nap between short batches (RunOne).
    bool may_nap = false;
    // A unix socket's file, removed at the end if it is still the one
    // bound here (same inode).
    std::string unlink_path;
    ino_t inode = 0;
    // The socket's drop count as last reported (SO_RXQ_OVFL).
    std::atomic<uint32_t> drops{0};
  };

  FeedReceiver(FeedSink& sink, int stop_fd);
  void Run();
  void RunOne(Socket& socket);
  // Reads what `socket` holds, in batches; `flags` for recvmmsg. Returns
  // the size of the last batch.
  size_t Drain(Socket& socket, int flags);

  FeedSink& sink_;
  std::vector<std::unique_ptr<Socket>> sockets_;
  std::vector<std::string> bound_;
  int stop_fd_;
  std::vector<char> buffers_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::atomic<uint64_t> datagrams_{0};
  std::atomic<uint64_t> oversized_{0};
};

}  // namespace mxlimit::daemon

#endif  // MXLIMIT_DAEMON_FEED_RECEIVER_H_
