// Dataset files are read within a byte limit, compressed and decompressed,
// and what is not JSON is refused from its first bytes.
#include "proto/dataset_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace blocktune {
namespace {

using ::testing::HasSubstr;

class DatasetFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "blocktune-file-XXXXXX")
            .string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(DatasetFileTest, AGzipBombStopsAtTheLimit) {
  // 8 MiB of blanks and a '{' compress to a few KiB.
  const std::string path = dir_ + "/bomb.json.gz";
  ASSERT_TRUE(WriteMaybeGzip(path, std::string(8 << 20, ' ') + "{}").ok());
  ASSERT_LT(std::filesystem::file_size(path), 64u << 10);
  auto read = ReadDatasetFile(path, /*max_bytes=*/1 << 20);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(read.status().message(),
              HasSubstr("decompressed text is larger than the limit of 1 MiB"));
  EXPECT_TRUE(ReadDatasetFile(path, 16 << 20).ok());
}

TEST_F(DatasetFileTest, ALargeFileIsRefusedBeforeItIsRead) {
  const std::string path = dir_ + "/big.json";
  std::ofstream(path) << "{" << std::string(3 << 20, ' ') << "}";
  auto read = ReadMaybeGzip(path, 1 << 20);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("the file is larger than"));
}

TEST_F(DatasetFileTest, AStreamIsCountedAsItIsRead) {
  // A device has no size up front; it is counted block by block.
  auto read = ReadMaybeGzip("/dev/zero", 1 << 20);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(DatasetFileTest, WhatIsNotJsonIsRefusedFromItsFirstBytes) {
  auto read = ReadDatasetFile("/dev/zero");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr("starts with the byte 0x00"));
}

}  // namespace
}  // namespace blocktune
