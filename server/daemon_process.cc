#include "server/daemon_process.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

namespace blocktune::testing {

std::unique_ptr<grpc::ClientContext> ContextWithDeadline(int seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(seconds));
  return ctx;
}

std::unique_ptr<v1::Blocktune::Stub> DaemonProcess::NewStub() const {
  std::string target = address();
  if (target.rfind("0.0.0.0:", 0) == 0) target = "127.0.0.1:" + target.substr(8);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(512 << 20);
  args.SetMaxSendMessageSize(512 << 20);
  return v1::Blocktune::NewStub(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
}

v1::CampaignProgress WatchToTheEnd(const DaemonProcess& d, int64_t id) {
  v1::WatchCampaignRequest req;
  req.set_id(id);
  auto ctx = ContextWithDeadline(90);
  auto reader = d.NewStub()->WatchCampaign(ctx.get(), req);
  v1::CampaignProgress p, last;
  while (reader->Read(&p)) last = p;
  grpc::Status s = reader->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  return last;
}

int64_t TrainSmallGemmModel(const DaemonProcess& d, int seconds) {
  v1::TrainModelRequest req;
  req.set_op(v1::OP_GEMM);
  req.add_hidden_layers(16);
  req.set_epochs(2);
  auto ctx = ContextWithDeadline(seconds);
  auto reader = d.NewStub()->TrainModel(ctx.get(), req);
  v1::TrainProgress p;
  int64_t model_id = 0;
  while (reader->Read(&p)) model_id = p.model_id();
  grpc::Status s = reader->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message() << "\n" << d.Log();
  return model_id;
}

}  // namespace blocktune::testing
