// Certificates for the TLS tests, made with the openssl command line in a
// directory the test owns: a CA, a server certificate it signed for
// localhost, 127.0.0.1 and ::1, one for another name, a client certificate,
// and a second CA that signed none of them.
//
//   std::string why;
//   if (!MakeTestCertificates(dir, &why)) GTEST_SKIP() << why;
//   options.tls.ca_file = dir + "/ca.crt";
//
// Files (PEM): ca.crt, other-ca.crt, server.crt/.key,
// wrong-name.crt/.key (names elsewhere.example), client.crt/.key.

#ifndef MXLIMIT_TESTS_TESTING_TEST_CERTIFICATES_H_
#define MXLIMIT_TESTS_TESTING_TEST_CERTIFICATES_H_

#include <cstdlib>
#include <fstream>
#include <string>

namespace mxlimit::testing {

namespace certificates_internal {

inline bool Run(const std::string& command, const std::string& dir,
                std::string* why) {
  const std::string full =
      "cd '" + dir + "' && " + command + " >>openssl.log 2>&1";
  if (std::system(full.c_str()) == 0) return true;
  *why = "openssl failed (see " + dir + "/openssl.log): " + command;
  return false;
}

inline bool MakeCa(const std::string& dir, const std::string& name,
                   std::string* why) {
  return Run(
      "openssl req -x509 -newkey ec -pkeyopt "
      "ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=" +
          name + " -keyout " + name + ".key -out " + name + ".crt",
      dir, why);
}

// NAME.crt/.key signed by ca.crt, with these subjectAltNames and usage.
inline bool MakeLeaf(const std::string& dir, const std::string& name,
                     const std::string& alt_names, const std::string& usage,
                     std::string* why) {
  std::ofstream(dir + "/" + name + ".ext")
      << (alt_names.empty() ? "" : "subjectAltName=" + alt_names + "\n")
      << "extendedKeyUsage=" << usage << "\n";
  return Run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
             "-nodes -subj /CN=" +
                 name + " -keyout " + name + ".key -out " + name + ".csr",
             dir, why) &&
         Run("openssl x509 -req -days 2 -in " + name +
                 ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -extfile " +
                 name + ".ext -out " + name + ".crt",
             dir, why);
}

}  // namespace certificates_internal

// False, with `why`, when openssl is missing or fails.
inline bool MakeTestCertificates(const std::string& dir, std::string* why) {
  using certificates_internal::MakeCa;
  using certificates_internal::MakeLeaf;
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    *why = "openssl not installed: apt install openssl";
    return false;
  }
  return MakeCa(dir, "ca", why) && MakeCa(dir, "other-ca", why) &&
         MakeLeaf(dir, "server", "DNS:localhost,IP:127.0.0.1,IP:::1",
                  "serverAuth", why) &&
         MakeLeaf(dir, "wrong-name", "DNS:elsewhere.example", "serverAuth",
                  why) &&
         MakeLeaf(dir, "client", "", "clientAuth", why);
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_TEST_CERTIFICATES_H_
