#include "src/shared/redis/tls_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

namespace mxlimit::internal {
namespace {

// The oldest error OpenSSL queued on this thread, as text; the queue is
// emptied so that the next call starts clean.
std::string TakeOpenSslError() {
  const unsigned long code = ERR_get_error();  // NOLINT(runtime/int)
  ERR_clear_error();
  if (code == 0) return "unknown TLS error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// A socket BIO of our own: OpenSSL's writes with write(2), which raises
// SIGPIPE on a closed connection in a process that did not ignore it.
// The BIO's data is the session's `fd_`: sessions do not move.
int SocketOf(BIO* bio) { return *static_cast<const int*>(BIO_get_data(bio)); }

int BioWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  const ssize_t n =
      send(SocketOf(bio), data, static_cast<size_t>(size), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_write(bio);
  }
  return static_cast<int>(n);
}

int BioRead(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  const ssize_t n = recv(SocketOf(bio), data, static_cast<size_t>(size), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_read(bio);
  }
  return static_cast<int>(n);
}

long BioCtrl(BIO*, int command, long, void*) {  // NOLINT(runtime/int)
  return command == BIO_CTRL_FLUSH ? 1 : 0;
}

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* SocketMethod() {
  static const BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "mxlimit socket");
    if (m == nullptr) return static_cast<BIO_METHOD*>(nullptr);
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::Create(
    const StoreOptions::Tls& options) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return absl::InternalError("TLS: " + TakeOpenSslError());
  }
  std::shared_ptr<const TlsContext> owner(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_mode(
      ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // One recv per batch of replies rather than one per record header and
  // one per body.
  SSL_CTX_set_read_ahead(ctx, 1);
  // AES-128-GCM first, as browsers order it: the cheapest of TLS 1.3's
  // suites on a CPU with AES instructions, for records of a few hundred
  // bytes each.
  SSL_CTX_set_ciphersuites(ctx,
                           "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                           "TLS_CHACHA20_POLY1305_SHA256");
  auto failed = [](const char* option, const std::string& file) {
    return absl::InvalidArgumentError(
        absl::StrCat(option, ": ", file, ": ", TakeOpenSslError()));
  };
  if (!options.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) !=
        1) {
      return failed("store.tls.ca_file", options.ca_file);
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return absl::InternalError("store.tls: the system's trust store: " +
                               TakeOpenSslError());
  }
  if (!options.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) !=
        1) {
      return failed("store.tls.cert_file", options.cert_file);
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(),
                                    SSL_FILETYPE_PEM) != 1) {
      return failed("store.tls.key_file", options.key_file);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return failed("store.tls.key_file", options.key_file);
    }
  }
  if (SocketMethod() == nullptr) {
    return absl::InternalError("TLS: " + TakeOpenSslError());
  }
  return owner;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

absl::Status TlsSession::Start(const TlsContext& context, int fd,
                               const std::string& host) {
  Reset();
  ERR_clear_error();
  ssl_ = SSL_new(context.get());
  BIO* bio = ssl_ != nullptr ? BIO_new(SocketMethod()) : nullptr;
  if (bio == nullptr) {
    Reset();
    return absl::ResourceExhaustedError("TLS: " + TakeOpenSslError());
  }
  fd_ = fd;
  BIO_set_data(bio, &fd_);
  SSL_set_bio(ssl_, bio, bio);  // The session owns it.
  const bool named = IsIpLiteral(host)
                         ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_),
                                                         host.c_str()) == 1
                         : SSL_set_tlsext_host_name(ssl_, host.c_str()) == 1 &&
                               SSL_set1_host(ssl_, host.c_str()) == 1;
  if (!named) {
    Reset();
    return absl::InvalidArgumentError("TLS: cannot verify the name " + host +
                                      ": " + TakeOpenSslError());
  }
  SSL_set_connect_state(ssl_);
  error_.clear();
  return absl::OkStatus();
}

void TlsSession::Reset() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ssl_ = nullptr;
}

TlsSession::Io TlsSession::Classify(int rc, const char* what) {
  const int e = SSL_get_error(ssl_, rc);
  switch (e) {
    case SSL_ERROR_WANT_READ:
      return Io::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Io::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return Io::kClosed;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0) {
        // errno 0: the peer closed without close_notify.
        if (errno == 0) return Io::kClosed;
        error_ = absl::StrCat(what, ": ", std::strerror(errno));
        return Io::kError;
      }
      break;
    default:
      break;
  }
  const long verify = SSL_get_verify_result(ssl_);  // NOLINT(runtime/int)
  if (verify != X509_V_OK) {
    ERR_clear_error();
    error_ = absl::StrCat(what, ": the server's certificate: ",
                          X509_verify_cert_error_string(verify));
  } else {
    error_ = absl::StrCat(what, ": ", TakeOpenSslError());
  }
  return Io::kError;
}

TlsSession::Io TlsSession::Handshake() {
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) return Io::kDone;
  return Classify(rc, "TLS handshake");
}

TlsSession::Io TlsSession::Read(char* data, size_t size, size_t* moved) {
  ERR_clear_error();
  errno = 0;
  size_t n = 0;
  const int rc = SSL_read_ex(ssl_, data, size, &n);
  if (rc == 1) {
    *moved = n;
    return Io::kDone;
  }
  *moved = 0;
  return Classify(rc, "TLS read");
}

bool TlsSession::pending() const { return SSL_has_pending(ssl_) == 1; }

TlsSession::Io TlsSession::Write(const char* data, size_t size, size_t* moved) {
  ERR_clear_error();
  errno = 0;
  size_t n = 0;
  const int rc = SSL_write_ex(ssl_, data, size, &n);
  if (rc == 1) {
    *moved = n;
    return Io::kDone;
  }
  *moved = 0;
  return Classify(rc, "TLS write");
}

}  // namespace mxlimit::internal
