#include "server/parse_errors.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/support/interceptor.h>

#include <string>

namespace blocktune {
namespace {

using grpc::experimental::InterceptionHookPoints;

// "/blocktune.v1.Blocktune/Query" -> "blocktune.v1.QueryRequest", from the
// compiled-in descriptors; empty for a method they do not know.
std::string RequestType(const char* method) {
  std::string name = method ? method : "";
  if (!name.empty() && name[0] == '/') name.erase(0, 1);
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return "";
  name[slash] = '.';
  const auto* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(
          name);
  return descriptor ? descriptor->input_type()->full_name() : "";
}

class ParseErrorInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit ParseErrorInterceptor(grpc::experimental::ServerRpcInfo* info)
      : info_(info) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    // The request of a unary or server-streaming call is parsed before the
    // handler runs; no message here means it did not parse. (A streaming
    // read also ends with none, so the status below is checked too.)
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_MESSAGE) &&
        !seen_message_) {
      seen_message_ = true;
      parse_failed_ = methods->GetRecvMessage() == nullptr;
    }
    if (parse_failed_ && methods->QueryInterceptionHookPoint(
                             InterceptionHookPoints::PRE_SEND_STATUS)) {
      // Exactly what gRPC's deserializer answers; a handler of this daemon
      // never sends INTERNAL without a message.
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::INTERNAL &&
          status.error_message().empty()) {
        const std::string type = RequestType(info_->method());
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            std::string("the request to ") + info_->method() +
                " does not parse as " + (type.empty() ? "its message" : type) +
                ": it is not protobuf of that message, or a string field "
                "in it is not UTF-8"));
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  bool seen_message_ = false;
  bool parse_failed_ = false;
};

class ParseErrorInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ParseErrorInterceptor(info);
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewParseErrorInterceptorFactory() {
  return std::make_unique<ParseErrorInterceptorFactory>();
}

}  // namespace blocktune
