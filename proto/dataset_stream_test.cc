// DatasetChunker: every record arrives once, in order, in chunks that stay
// under their size (a record larger than a chunk goes alone).
#include "proto/dataset_stream.h"

#include <gtest/gtest.h>

#include <vector>

namespace blocktune {
namespace {

v1::Sample SampleOf(int i, size_t error_bytes) {
  v1::Sample s;
  s.set_status("ok");
  s.set_measured_unix(i);
  s.set_error(std::string(error_bytes, 'e'));
  return s;
}

TEST(DatasetChunkerTest, ChunksStayUnderTheirSizeAndKeepEveryRecordInOrder) {
  std::vector<v1::Dataset> chunks;
  DatasetChunker chunker(
      [&](v1::Dataset& c) {
        chunks.push_back(c);
        return OkStatus();
      },
      /*chunk_bytes=*/10000);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(chunker.Add(SampleOf(i, 90)).ok());
  v1::Model big;
  big.set_weights(std::string(50000, 'w'));
  ASSERT_TRUE(chunker.Add(big).ok());
  ASSERT_TRUE(chunker.Finish().ok());

  int next = 0;
  int models = 0;
  for (const v1::Dataset& c : chunks) {
    EXPECT_EQ(c.format(), kDatasetFormat);
    if (c.models_size() > 0) {
      EXPECT_EQ(c.samples_size(), 0)
          << "a record larger than a chunk goes alone";
      models += c.models_size();
      continue;
    }
    EXPECT_LE(c.ByteSizeLong(), 10000u + 64);
    for (const v1::Sample& s : c.samples())
      EXPECT_EQ(s.measured_unix(), next++);
  }
  EXPECT_EQ(next, 1000);
  EXPECT_EQ(models, 1);
  EXPECT_GT(chunks.size(), 10u);
}

TEST(DatasetChunkerTest, AnEmptyDatasetIsOneChunkNamingTheFormat) {
  std::vector<v1::Dataset> chunks;
  DatasetChunker chunker([&](v1::Dataset& c) {
    chunks.push_back(c);
    return OkStatus();
  });
  ASSERT_TRUE(chunker.Finish().ok());
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].format(), kDatasetFormat);
}

TEST(DatasetChunkerTest, AnErrorFromEmitStopsTheChunker) {
  DatasetChunker chunker([&](v1::Dataset&) { return Cancelled("gone"); }, 100);
  Status s = OkStatus();
  for (int i = 0; i < 10 && s.ok(); ++i) s = chunker.Add(SampleOf(i, 90));
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace blocktune
