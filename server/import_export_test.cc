// Streamed Import and Export against a real blocktuned: datasets larger
// than one message, the import size limit, and all-or-nothing imports
// (a bad record, an interrupted stream, a daemon killed midway).
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/family.h"
#include "proto/convert.h"
#include "proto/dataset_stream.h"
#include "server/daemon_process.h"
#include "server/record_convert.h"
#include "server/sample_digest.h"
#include "server/store_test_util.h"

namespace blocktune {
namespace {

using ::testing::HasSubstr;
using namespace ::blocktune::testing;  // NOLINT

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(120));
  return ctx;
}

// `samples` distinct samples and one tuned answer, as a dataset.
v1::Dataset Samples(int samples, int64_t batch = 1) {
  v1::Dataset d;
  d.set_format(kDatasetFormat);
  for (int i = 0; i < samples; ++i)
    ToProto(TestSample(batch, i), d.add_samples());
  ToProto(TestTuned(TestGemm(1024, 1024, 1024), TestShape(128, 128), 1e-4),
          d.add_tuned());
  return d;
}

v1::ImportRequest Chunk(const v1::Dataset& d, bool commit) {
  v1::ImportRequest req;
  *req.mutable_dataset() = d;
  req.set_commit(commit);
  return req;
}

class ImportExportTest : public ::testing::Test {
 protected:
  // `log`: a new name for each daemon of a test, so that one's "listening
  // on" is not taken for the next one's.
  std::unique_ptr<DaemonProcess> Start(std::vector<std::string> extra = {},
                                       const std::string& log = "blocktuned") {
    std::vector<std::string> args = {
        "--listen",    "unix:" + dir_.path() + "/s.sock",
        "--db",        dir_.path() + "/b.db",
        "--gpus",      "none",
        "--log-level", "debug"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto d = std::make_unique<DaemonProcess>(BLOCKTUNED, args,
                                             dir_.path() + "/" + log + ".log");
    EXPECT_TRUE(d->ok()) << d->Log();
    return d;
  }
  static v1::HealthResponse Health(const DaemonProcess& d) {
    v1::HealthResponse health;
    EXPECT_TRUE(d.NewStub()->Health(Ctx().get(), {}, &health).ok());
    return health;
  }
  static int64_t StoredSamples(const DaemonProcess& d) {
    return Health(d).samples();
  }
  TempDir dir_;
};

TEST_F(ImportExportTest, DatasetsLargerThanOneMessageTravelInChunks) {
  auto d = Start();
  v1::Dataset dataset = Samples(60000);
  ASSERT_GT(dataset.ByteSizeLong(), 1.5 * kMaxRequestMessageBytes);
  v1::ImportResponse imported;
  grpc::Status s =
      ImportDataset(*d->NewStub(), Ctx().get(), dataset, &imported);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(imported.samples(), 60000);
  EXPECT_EQ(imported.tuned(), 1);

  // Export streams chunks, each well under the message limit.
  v1::ExportRequest req;
  req.set_include_samples(true);
  auto ctx = Ctx();
  auto reader = d->NewStub()->Export(ctx.get(), req);
  v1::ExportResponse chunk;
  int chunks = 0;
  v1::Dataset exported;
  while (reader->Read(&chunk)) {
    ++chunks;
    EXPECT_EQ(chunk.dataset().format(), kDatasetFormat);
    EXPECT_LE(chunk.ByteSizeLong(), kDatasetChunkBytes + 1024);
    exported.MergeFrom(chunk.dataset());
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_GT(chunks, 3);
  EXPECT_EQ(exported.samples_size(), 60000);
  EXPECT_EQ(exported.tuned_size(), 1);

  // The helper gathers the same.
  v1::Dataset again;
  ASSERT_TRUE(ExportDataset(*d->NewStub(), Ctx().get(), req, &again).ok());
  EXPECT_EQ(again.samples_size(), 60000);
}

// Issue 19 part 4: an import keeps the generator versions it is given
// (older ones stay stale and never answer), refuses a version newer than
// this build's generator, and an export with include_stale carries them
// back out unchanged.
TEST_F(ImportExportTest, ImportKeepsGeneratorVersionsAndRefusesFutureOnes) {
  auto d = Start();
  v1::Dataset data = Samples(2);
  data.clear_tuned();
  const int current = BlockShapeFamily(Op::kGemm).version();
  ASSERT_GE(current, 1);
  data.mutable_samples(0)->mutable_kernel()->set_generator_version(current - 1);
  v1::ImportResponse resp;
  grpc::Status s = ImportDataset(*d->NewStub(), Ctx().get(), data, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const v1::HealthResponse health = Health(*d);
  EXPECT_EQ(health.samples(), 2);
  EXPECT_EQ(health.stale_samples(), 1);

  v1::ExportRequest ex;
  ex.set_include_samples(true);
  v1::Dataset current_only, all;
  ASSERT_TRUE(ExportDataset(*d->NewStub(), Ctx().get(), ex, &current_only).ok());
  EXPECT_EQ(current_only.samples_size(), 1);
  ex.set_include_stale(true);
  ASSERT_TRUE(ExportDataset(*d->NewStub(), Ctx().get(), ex, &all).ok());
  ASSERT_EQ(all.samples_size(), 2);
  std::multiset<int> versions;
  for (const v1::Sample& x : all.samples()) {
    EXPECT_EQ(x.kernel().family(), "gemm.ffma");
    versions.insert(x.kernel().generator_version());
  }
  EXPECT_EQ(versions, (std::multiset<int>{current - 1, current}));

  // A newer blocktune's generator: refused, naming the field; nothing stored.
  v1::Dataset future = Samples(3, /*batch=*/7);
  future.clear_tuned();
  future.mutable_samples(2)->mutable_kernel()->set_generator_version(current + 1);
  s = ImportDataset(*d->NewStub(), Ctx().get(), future, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("dataset.samples[2].kernel.generator_version"));
  EXPECT_THAT(s.error_message(), HasSubstr("newer blocktune"));
  EXPECT_EQ(StoredSamples(*d), 2);
  // An unknown family, likewise.
  future.mutable_samples(2)->mutable_kernel()->set_generator_version(current);
  future.mutable_samples(2)->mutable_kernel()->set_family("gemm.tcgen05");
  future.mutable_samples(2)->clear_block_shape();
  s = ImportDataset(*d->NewStub(), Ctx().get(), future, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("dataset.samples[2].kernel.family"));
  EXPECT_EQ(StoredSamples(*d), 2);
  // A family that does not implement the context's precision (gemm.mma
  // under an fp32 context): refused, samples and tuned answers alike. A
  // tuned answer was imported, then served to fp32 queries.
  const KernelFamily& mma = **FindFamily("gemm.mma");
  v1::KernelConfig bf16_kernel;
  bf16_kernel.set_family("gemm.mma");
  bf16_kernel.set_generator_version(mma.version());
  for (const ParamSpec& spec : mma.params()) {
    v1::ConfigParam* kp = bf16_kernel.add_params();
    kp->set_name(spec.name);
    kp->set_value(spec.values[0]);
  }
  *future.mutable_samples(2)->mutable_kernel() = bf16_kernel;
  s = ImportDataset(*d->NewStub(), Ctx().get(), future, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("dataset.samples[2].kernel.family 'gemm.mma' implements "
                        "bf16, fp16, tf32, not the context's fp32"));
  EXPECT_EQ(StoredSamples(*d), 2);
  v1::Dataset tuned = Samples(3, /*batch=*/8);
  tuned.clear_samples();
  ASSERT_GT(tuned.tuned_size(), 0);
  *tuned.mutable_tuned(0)->mutable_kernel() = bf16_kernel;
  tuned.mutable_tuned(0)->clear_block_shape();
  s = ImportDataset(*d->NewStub(), Ctx().get(), tuned, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("tuned[0].kernel.family 'gemm.mma' implements bf16, "
                        "fp16, tf32, not the context's fp32"));
}

// A generator version bump keeps the samples whose kernel did not change:
// an import stores a stale sample as current when its kernel digest is what
// this build's generator emits for it, and an export gives every current
// sample its digest, so that the next bump can tell (server/sample_digest.h).
TEST_F(ImportExportTest, ImportRelabelsStaleSamplesWhoseKernelIsUnchanged) {
  auto d = Start();
  const int current = BlockShapeFamily(Op::kGemm).version();
  ASSERT_GE(current, 1);
  v1::Dataset data = Samples(4, /*batch=*/3);
  data.clear_tuned();
  std::vector<std::string> digests;
  for (const v1::Sample& p : data.samples()) {
    auto s = FromProto(p, "sample");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto digest = RegeneratedDigest(*s);
    ASSERT_TRUE(digest.ok()) << digest.status().ToString();
    digests.push_back(*digest);
  }
  // Another tile's kernel for sample 1's context (M is a kernel argument:
  // samples 1 and 3 share one kernel).
  auto one = FromProto(data.samples(1), "sample");
  ASSERT_TRUE(one.ok());
  one->kernel = KernelConfig::OfBlockShape(Op::kGemm, TestShape(128, 64));
  auto other = RegeneratedDigest(*one);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_NE(*other, digests[1]);
  // 0: stale, today's kernel. 1: stale, another kernel's digest. 2: stale,
  // no digest. 3: current, no digest.
  for (int i : {0, 1, 2})
    data.mutable_samples(i)->mutable_kernel()->set_generator_version(current - 1);
  data.mutable_samples(0)->set_kernel_digest(digests[0]);
  data.mutable_samples(1)->set_kernel_digest(*other);
  v1::ImportResponse resp;
  grpc::Status s = ImportDataset(*d->NewStub(), Ctx().get(), data, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.samples(), 4);
  EXPECT_EQ(resp.relabeled_samples(), 1);
  const v1::HealthResponse health = Health(*d);
  EXPECT_EQ(health.samples(), 4);
  EXPECT_EQ(health.stale_samples(), 2);

  v1::ExportRequest ex;
  ex.set_include_samples(true);
  ex.set_include_stale(true);
  v1::Dataset all;
  ASSERT_TRUE(ExportDataset(*d->NewStub(), Ctx().get(), ex, &all).ok());
  ASSERT_EQ(all.samples_size(), 4);
  std::map<int64_t, const v1::Sample*> by_m;
  for (const v1::Sample& x : all.samples())
    by_m[x.context().gemm().m()] = &x;
  ASSERT_EQ(by_m.size(), 4u);
  std::vector<const v1::Sample*> out;  // in the dataset's order (m = 64 + i)
  for (const auto& [m, sample] : by_m) out.push_back(sample);
  EXPECT_EQ(out[0]->kernel().generator_version(), current);
  EXPECT_EQ(out[0]->kernel_digest(), digests[0]);
  EXPECT_EQ(out[1]->kernel().generator_version(), current - 1);
  EXPECT_EQ(out[1]->kernel_digest(), *other);  // kept as measured
  EXPECT_EQ(out[2]->kernel().generator_version(), current - 1);
  EXPECT_EQ(out[2]->kernel_digest(), "");  // unknown, and stale: not filled
  EXPECT_EQ(out[3]->kernel().generator_version(), current);
  EXPECT_EQ(out[3]->kernel_digest(), digests[3]);  // filled on the way out
}

TEST_F(ImportExportTest, AnEmptyExportStillNamesItsFormat) {
  auto d = Start();
  v1::Dataset exported;
  ASSERT_TRUE(ExportDataset(*d->NewStub(), Ctx().get(), {}, &exported).ok());
  EXPECT_EQ(exported.format(), kDatasetFormat);
  EXPECT_EQ(exported.tuned_size(), 0);
  // A device the store does not know is NOT_FOUND, not an empty dataset (a
  // misspelt name exported nothing and said nothing).
  v1::ExportRequest unknown;
  unknown.set_device_name("NoSuch");
  grpc::Status s = ExportDataset(*d->NewStub(), Ctx().get(), unknown, &exported);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("device_name 'NoSuch' is not in the store"));
}

TEST_F(ImportExportTest,
       AnImportOverTheLimitIsRefusedNamingItAndStoresNothing) {
  auto d = Start({"--max-import-mib", "1"});
  v1::Dataset dataset = Samples(16000);  // about 2 MiB
  ASSERT_GT(dataset.ByteSizeLong(), 1.5 * (1 << 20));
  v1::ImportResponse imported;
  grpc::Status s =
      ImportDataset(*d->NewStub(), Ctx().get(), dataset, &imported);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("limit of 1 MiB"));
  EXPECT_THAT(s.error_message(), HasSubstr("--max-import-mib"));
  EXPECT_EQ(StoredSamples(*d), 0);
  // Below the limit, the same daemon imports.
  ASSERT_TRUE(
      ImportDataset(*d->NewStub(), Ctx().get(), Samples(1000), &imported).ok());
  EXPECT_EQ(StoredSamples(*d), 1000);
}

TEST_F(ImportExportTest, AStreamThatEndsBeforeCommitStoresNothing) {
  auto d = Start();
  auto stub = d->NewStub();
  v1::ImportResponse imported;
  auto ctx = Ctx();
  auto writer = stub->Import(ctx.get(), &imported);
  ASSERT_TRUE(writer->Write(Chunk(Samples(100, 1), false)));
  ASSERT_TRUE(writer->Write(Chunk(Samples(100, 2), false)));
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_THAT(s.error_message(), HasSubstr("before its chunk marked commit"));
  EXPECT_EQ(StoredSamples(*d), 0);
}

TEST_F(ImportExportTest, AChunkAfterTheCommitIsRefused) {
  auto d = Start();
  auto stub = d->NewStub();
  v1::ImportResponse imported;
  auto ctx = Ctx();
  auto writer = stub->Import(ctx.get(), &imported);
  writer->Write(Chunk(Samples(10, 1), true));
  writer->Write(Chunk(Samples(10, 2), true));
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("after the chunk marked commit"));
  EXPECT_EQ(StoredSamples(*d), 0);
}

TEST_F(ImportExportTest, ABadRecordInALaterChunkIsNamedByItsIndexInTheImport) {
  auto d = Start();
  auto stub = d->NewStub();
  v1::ImportResponse imported;
  auto ctx = Ctx();
  auto writer = stub->Import(ctx.get(), &imported);
  v1::Dataset second = Samples(5, 2);
  second.mutable_samples(3)->set_status("fast");
  writer->Write(Chunk(Samples(100, 1), false));
  writer->Write(Chunk(second, true));
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("dataset.samples[103]"));
  EXPECT_EQ(StoredSamples(*d), 0);
}

TEST_F(ImportExportTest, AChunkWithoutTheFormatIsRefused) {
  auto d = Start();
  v1::Dataset unnamed = Samples(3);
  unnamed.clear_format();
  auto stub = d->NewStub();
  v1::ImportResponse imported;
  auto ctx = Ctx();
  auto writer = stub->Import(ctx.get(), &imported);
  writer->Write(Chunk(unnamed, true));
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("dataset.format must be"));
}

TEST_F(ImportExportTest, ADaemonKilledDuringAnImportKeepsNothingOfIt) {
  {
    auto d = Start();
    v1::ImportResponse imported;
    ASSERT_TRUE(
        ImportDataset(*d->NewStub(), Ctx().get(), Samples(50, 1), &imported)
            .ok());
    auto stub = d->NewStub();
    auto ctx = Ctx();
    auto writer = stub->Import(ctx.get(), &imported);
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(writer->Write(Chunk(Samples(1000, 100 + i), false)));
    }
    EXPECT_EQ(d->Stop(SIGKILL), 128 + SIGKILL);
    writer->WritesDone();
    EXPECT_FALSE(writer->Finish().ok());
  }
  auto d = Start({}, "restarted");
  EXPECT_EQ(StoredSamples(*d), 50);
}

TEST_F(ImportExportTest, ConcurrentImportsAreEachStoredWhole) {
  auto d = Start();
  std::vector<std::future<grpc::Status>> imports;
  for (int i = 0; i < 3; ++i) {
    imports.push_back(std::async(std::launch::async, [&, i] {
      v1::ImportResponse imported;
      return ImportDataset(*d->NewStub(), Ctx().get(), Samples(20000, i + 1),
                           &imported);
    }));
  }
  for (auto& f : imports) EXPECT_TRUE(f.get().ok());
  EXPECT_EQ(StoredSamples(*d), 60000);
}

}  // namespace
}  // namespace blocktune
