// TLS end to end: a CA and a server certificate made with openssl at test
// time, blocktuned serving them, and the CLI and the client library
// connecting with the CA, failing without it (saying why), and sending a
// token over TLS beyond loopback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "blocktune/client.h"
#include "server/child_daemon.h"

namespace blocktune {
namespace {

using testing::ChildDaemon;
using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunCommand;

constexpr char kToken[] = "tls-test-token-0123456789abcdef";

CommandResult Cli(const std::string& args) {
  return RunCommand(std::string(BLOCKTUNE_CLI) + " " + args);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RunCommand("command -v openssl").code != 0) {
      GTEST_SKIP() << "openssl is not installed (apt-get install openssl); "
                      "the TLS test needs it to make certificates";
    }
    std::string pattern =
        (std::filesystem::temp_directory_path() / "blocktune-tls-XXXXXX")
            .string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ASSERT_TRUE(MakeCa("ca")) << log_;
    ASSERT_TRUE(MakeCa("other-ca")) << log_;
    ASSERT_TRUE(MakeServerCert("ca")) << log_;
    std::ofstream(dir_ + "/token") << kToken << "\n";
    chmod((dir_ + "/token").c_str(), 0600);
  }
  void TearDown() override {
    daemon_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool Run(const std::string& command) {
    CommandResult r = RunCommand("cd " + dir_ + " && " + command);
    log_ += "$ " + command + "\n" + r.out;
    return r.code == 0;
  }
  // A self-signed CA: NAME.pem and NAME.key.
  bool MakeCa(const std::string& name) {
    return Run(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "
        "'/CN=blocktune test " +
        name + "' -keyout " + name + ".key -out " + name +
        ".pem "
        "-addext basicConstraints=critical,CA:TRUE "
        "-addext keyUsage=critical,keyCertSign,cRLSign 2>&1");
  }
  // server.pem/server.key, signed by `ca`, naming 127.0.0.1 and localhost.
  bool MakeServerCert(const std::string& ca) {
    std::ofstream(dir_ + "/server.ext")
        << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
           "basicConstraints=CA:FALSE\n"
           "keyUsage=digitalSignature,keyEncipherment\n"
           "extendedKeyUsage=serverAuth\n";
    return Run("openssl req -newkey rsa:2048 -nodes -subj '/CN=localhost' "
               "-keyout server.key -out server.csr 2>&1") &&
           Run("openssl x509 -req -in server.csr -CA " + ca + ".pem -CAkey " +
               ca +
               ".key -CAcreateserial -days 2 -extfile server.ext "
               "-out server.pem 2>&1");
  }

  // blocktuned over TLS on `listen`; its address as clients reach it.
  std::string StartDaemon(const std::string& listen, bool token) {
    std::vector<std::string> args = {"--listen",   listen,
                                     "--db",       dir_ + "/b.db",
                                     "--gpus",     "none",
                                     "--tls-cert", dir_ + "/server.pem",
                                     "--tls-key",  dir_ + "/server.key"};
    if (token) args.insert(args.end(), {"--token-file", dir_ + "/token"});
    daemon_ = std::make_unique<ChildDaemon>(BLOCKTUNED, args, dir_ + "/log");
    EXPECT_TRUE(daemon_->ok()) << daemon_->Log();
    std::string address = daemon_->address();
    if (address.rfind("0.0.0.0:", 0) == 0)
      address = "127.0.0.1:" + address.substr(8);
    return address;
  }

  std::string dir_;
  std::string log_;
  std::unique_ptr<ChildDaemon> daemon_;
};

TEST_F(TlsTest, TheCliConnectsWithTheCaAndSaysWhyNotWithout) {
  const std::string server = "--server " + StartDaemon("127.0.0.1:0", false);
  EXPECT_THAT(daemon_->Log(), HasSubstr("(TLS)"));

  CommandResult ok = Cli("health " + server + " --tls-ca " + dir_ + "/ca.pem");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_THAT(ok.out, HasSubstr("blocktuned"));

  // Plaintext against TLS: the daemon answers, the handshake fails.
  CommandResult plain = Cli("health " + server);
  EXPECT_EQ(plain.code, 3) << plain.out;
  EXPECT_THAT(plain.out, HasSubstr("--tls-ca"));
  EXPECT_THAT(plain.out, Not(HasSubstr("is it running?")));

  // A CA that did not sign the daemon's certificate.
  CommandResult wrong =
      Cli("health " + server + " --tls-ca " + dir_ + "/other-ca.pem");
  EXPECT_EQ(wrong.code, 3) << wrong.out;
  EXPECT_THAT(wrong.out, HasSubstr("TLS handshake failed"));
}

TEST_F(TlsTest, TheClientLibraryConnectsWithTheCaOnly) {
  const std::string address = StartDaemon("127.0.0.1:0", false);
  ClientOptions with_ca;
  with_ca.tls_ca = dir_ + "/ca.pem";
  auto answer = Client(address, with_ca).Query(GemmProblem{1000, 512, 77});
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->match, MatchQuality::kDefault);  // an empty store

  auto plain = Client(address).Query(GemmProblem{1000, 512, 77});
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(plain.error().message, HasSubstr("--tls-ca"));

  ClientOptions other_ca;
  other_ca.tls_ca = dir_ + "/other-ca.pem";
  auto wrong = Client(address, other_ca).Query(GemmProblem{1000, 512, 77});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kUnavailable);
}

// Beyond loopback the daemon needs a token whatever the transport; over TLS
// the token and the CA work together.
TEST_F(TlsTest, TokenAndTlsTogetherBeyondLoopback) {
  const std::string address = StartDaemon("0.0.0.0:0", true);
  const std::string ca = " --tls-ca " + dir_ + "/ca.pem";
  const std::string token = " --token-file " + dir_ + "/token";

  CommandResult ok = Cli("health --server " + address + ca + token);
  EXPECT_EQ(ok.code, 0) << ok.out;
  CommandResult no_token = Cli("health --server " + address + ca);
  EXPECT_EQ(no_token.code, 4) << no_token.out;
  EXPECT_THAT(no_token.out, HasSubstr("UNAUTHENTICATED"));
  CommandResult no_ca = Cli("health --server " + address + token);
  EXPECT_EQ(no_ca.code, 3) << no_ca.out;

  ClientOptions options;
  options.tls_ca = dir_ + "/ca.pem";
  options.token_file = dir_ + "/token";
  auto answer = Client(address, options).Query(GemmProblem{1000, 512, 77});
  EXPECT_TRUE(answer.ok()) << answer.error().message;
  options.token_file.clear();
  auto denied = Client(address, options).Query(GemmProblem{1000, 512, 77});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, ErrorCode::kUnauthenticated);
}

}  // namespace
}  // namespace blocktune
