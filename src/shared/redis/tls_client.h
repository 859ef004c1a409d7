// TLS for connections to Redis (`rediss://`), on OpenSSL: one `TlsContext`
// per store (what to trust, the client certificate), one `TlsSession` per
// connection, driven over a non-blocking socket by its owner's event loop.
// The server's certificate is always verified and must name the host the
// URL gave (a DNS name, or an IP address in its subjectAltName); the name is
// also sent as SNI.
//
//   absl::StatusOr<std::shared_ptr<const TlsContext>> ctx =
//       TlsContext::Create(options.tls);
//   TlsSession s;
//   if (absl::Status st = s.Start(**ctx, fd, "redis.example.org"); !st.ok())
//   ...
//   switch (s.Handshake()) { case TlsSession::Io::kDone: ...; }
//
// Sockets are read and written with recv/send(MSG_NOSIGNAL): a Redis that
// goes away is an error, never a SIGPIPE for the embedding process.
//
// Internal: not installed.

#ifndef MXLIMIT_SHARED_REDIS_TLS_CLIENT_H_
#define MXLIMIT_SHARED_REDIS_TLS_CLIENT_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mxlimit/options.h"

struct ssl_ctx_st;
struct ssl_st;

namespace mxlimit::internal {

class TlsContext {
 public:
  // Loads the CA file (or the system's trust store) and the client
  // certificate and key. Errors name the option and the file.
  static absl::StatusOr<std::shared_ptr<const TlsContext>> Create(
      const StoreOptions::Tls& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  ssl_ctx_st* get() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

class TlsSession {
 public:
  enum class Io {
    kDone,       // Handshake finished, or bytes moved (see the count).
    kWantRead,   // Call again once the socket is readable.
    kWantWrite,  // Call again once the socket is writable.
    kClosed,     // The peer closed the connection.
    kError,      // error() says why; drop the connection.
  };

  TlsSession() = default;
  ~TlsSession() { Reset(); }
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // A client session on the connected socket `fd`, which stays the
  // caller's to close. `host` is what the certificate must name.
  absl::Status Start(const TlsContext& context, int fd,
                     const std::string& host);
  // Frees the session (not the socket).
  void Reset();
  bool active() const { return ssl_ != nullptr; }

  Io Handshake();
  // Up to `size` decrypted bytes into `data`; `*moved` is how many when
  // kDone. Bytes can be waiting inside the session when the socket has
  // none: read until kWantRead or !pending().
  Io Read(char* data, size_t size, size_t* moved);
  // Whether the session holds received bytes, decrypted or not, that Read
  // would return without the socket: when not, a level-triggered readable
  // event says when to read again.
  bool pending() const;
  // Writes from `data`; `*moved` is how many were taken when kDone (at
  // least one TLS record). After kWantRead or kWantWrite, the next Write
  // must pass the same first `size` bytes again (the session holds on to
  // the record it was sending).
  Io Write(const char* data, size_t size, size_t* moved);

  // Why the last call answered kError, e.g. the certificate check's
  // reason.
  const std::string& error() const { return error_; }

 private:
  Io Classify(int rc, const char* what);

  ssl_st* ssl_ = nullptr;
  int fd_ = -1;
  std::string error_;
};

}  // namespace mxlimit::internal

#endif  // MXLIMIT_SHARED_REDIS_TLS_CLIENT_H_
