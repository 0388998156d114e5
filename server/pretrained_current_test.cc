// Issue 20: no shipped model or dataset row comes from stale data. Every
// file under models/pretrained/ (what scripts/run.sh imports) is read as the
// daemon's import reads it, and each sample's kernel and each model (its
// kernel and the data it learned from) must be of its family's current
// generator version, or be one that the import re-labels as current (its
// kernel is the one this build emits: server/sample_digest.h). A generator
// bump without new measurements, or a sample file left with rows of an
// older version whose kernels changed, fails here and names the rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/family.h"

#include "kernels/ptxas_harness.h"  // ParallelFor
#include "proto/dataset_file.h"
#include "server/record_convert.h"
#include "server/sample_digest.h"
#include "server/tuning_store.h"

namespace blocktune {
namespace {

namespace fs = std::filesystem;

// A shipped dataset or models file (what scripts/run.sh imports).
bool IsDatasetFile(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 8 && name.compare(name.size() - 8, 8, ".json.gz") == 0;
}

// The models of every shipped models*.json.gz under dir (and its folders),
// each with its file's path relative to dir.
void ReadShippedModels(const fs::path& dir,
                       std::vector<std::pair<std::string, ModelRecord>>* out) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("models", 0) != 0 || !IsDatasetFile(entry.path())) continue;
    const std::string where = entry.path().lexically_relative(dir).string();
    auto dataset = ReadDatasetFile(entry.path().string());
    ASSERT_TRUE(dataset.ok()) << where << ": " << dataset.status().ToString();
    for (int i = 0; i < dataset->models_size(); ++i) {
      auto m = FromProto(dataset->models(i), "models[" + std::to_string(i) + "]");
      ASSERT_TRUE(m.ok()) << where << ": " << m.status().ToString();
      out->emplace_back(where, std::move(*m));
    }
  }
}

TEST(PretrainedTest, ShippedSamplesAndModelsAreCurrent) {
  const fs::path root = fs::path(BLOCKTUNE_SOURCE_DIR) / "models" / "pretrained";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && IsDatasetFile(entry.path()))
      files.push_back(entry.path().string());
  }
  ASSERT_FALSE(files.empty()) << "no dataset files under " << root;
  // One file's rows, read on a thread of its own (JSON parsing is most of
  // this test's time).
  struct FileRows {
    std::string error;
    int64_t samples = 0, models = 0;
    std::vector<std::string> stale;
    // Rows of an older version, with where they are, for the re-labelling.
    std::vector<SampleRecord> older;
    std::vector<std::string> older_where;
  };
  auto read = [](const std::string& file, FileRows* out) {
    auto dataset = ReadDatasetFile(file);
    if (!dataset.ok()) {
      out->error = file + ": " + dataset.status().ToString();
      return;
    }
    for (int i = 0; i < dataset->samples_size(); ++i) {
      const std::string field = "samples[" + std::to_string(i) + "]";
      auto s = FromProto(dataset->samples(i), field);
      if (!s.ok()) {
        out->error = file + ": " + s.status().ToString();
        return;
      }
      ++out->samples;
      if (!s->kernel.IsCurrent()) {
        out->older_where.push_back(file + " " + field + ": " + s->kernel.family +
                                   " v" + std::to_string(s->kernel.generator_version));
        out->older.push_back(std::move(*s));
      }
    }
    for (int i = 0; i < dataset->models_size(); ++i) {
      const std::string field = "models[" + std::to_string(i) + "]";
      auto m = FromProto(dataset->models(i), field);
      if (!m.ok()) {
        out->error = file + ": " + m.status().ToString();
        return;
      }
      ++out->models;
      if (!m->IsCurrent())
        out->stale.push_back(file + " " + field + ": " + m->family + " v" +
                             std::to_string(m->generator_version) + ", data v" +
                             std::to_string(m->data_version));
    }
  };
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<FileRows> rows(files.size());
  ParallelFor(files.size(), threads, [&](size_t i, int) { read(files[i], &rows[i]); });
  int64_t samples = 0, models = 0;
  std::vector<std::string> stale;
  std::vector<SampleRecord> older;
  std::vector<std::string> older_where;
  for (FileRows& r : rows) {
    ASSERT_TRUE(r.error.empty()) << r.error;
    samples += r.samples;
    models += r.models;
    stale.insert(stale.end(), r.stale.begin(), r.stale.end());
    for (size_t i = 0; i < r.older.size(); ++i) {
      older.push_back(std::move(r.older[i]));
      older_where.push_back(std::move(r.older_where[i]));
    }
  }
  // What the import does with them: a row whose kernel this build emits
  // unchanged (but for the version in its comment) is stored as current.
  const int64_t relabeled = RelabelUnchanged(&older, threads);
  for (size_t i = 0; i < older.size(); ++i)
    if (!older[i].kernel.IsCurrent())
      stale.push_back(older_where[i] + " (its kernel changed since)");
  std::printf("%zu files, %lld samples, %lld models; %zu rows of an older version, "
              "%lld of them re-labelled by the import (the same kernel)\n",
              files.size(), static_cast<long long>(samples),
              static_cast<long long>(models), older.size(),
              static_cast<long long>(relabeled));
  EXPECT_GT(samples, 0);
  EXPECT_GT(models, 0);
  std::string first;
  for (size_t i = 0; i < stale.size() && i < 10; ++i) first += "\n  " + stale[i];
  EXPECT_TRUE(stale.empty()) << stale.size() << " stale rows, the first:" << first;
}

// Issue 20: the H100 (the first device) has a shipped model of every
// family in every precision the family implements, so a query of any
// precision there searches every family. A family that lands without its
// H100 models fails here, naming it.
TEST(PretrainedTest, TheH100HasAModelOfEveryFamilyAndPrecision) {
  const fs::path dir =
      fs::path(BLOCKTUNE_SOURCE_DIR) / "models" / "pretrained" / "h100-sxm";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  std::vector<std::pair<std::string, ModelRecord>> models;
  ASSERT_NO_FATAL_FAILURE(ReadShippedModels(dir, &models));
  std::set<std::pair<std::string, DType>> have;
  for (const auto& [where, m] : models) have.insert({m.family, m.precision});
  std::string missing;
  int pairs = 0;
  for (const KernelFamily* f : Families())
    for (DType d : f->precisions()) {
      ++pairs;
      if (!have.count({std::string(f->name()), d}))
        missing += " " + std::string(f->name()) + "/" + std::string(ToString(d));
    }
  std::printf("%d (family, precision) pairs, %zu with an H100 model\n", pairs, have.size());
  EXPECT_TRUE(missing.empty()) << "no shipped H100 model of:" << missing;
}

// The daemon answers with the model it stored last of each (device, op,
// precision, family), and scripts/run.sh and the fp32 evaluation import
// several files of one device (models.json.gz holds the fp32 gemm and conv
// models beside models-gemm-fp32.json.gz). A family trained again in one of
// them and left older in another would be answered by whichever file came
// last: every copy of a model must be the same one (its training time).
TEST(PretrainedTest, NoShippedModelIsShadowedByAnOlderCopy) {
  std::vector<std::pair<std::string, ModelRecord>> models;
  ASSERT_NO_FATAL_FAILURE(ReadShippedModels(
      fs::path(BLOCKTUNE_SOURCE_DIR) / "models" / "pretrained", &models));
  using Key = std::tuple<std::string, Op, DType, std::string>;
  std::map<Key, std::pair<int64_t, std::string>> first;
  std::string shadowed;
  int copies = 0;
  for (const auto& [where, m] : models) {
    const Key key{m.device.name, m.op, m.precision, m.family};
    auto [it, added] = first.emplace(key, std::make_pair(m.created_unix, where));
    if (added) continue;
    ++copies;
    if (it->second.first != m.created_unix)
      shadowed += "\n  " + m.device.name + " " + m.family + " " +
                  std::string(ToString(m.precision)) + ": trained at " +
                  std::to_string(it->second.first) + " in " + it->second.second +
                  ", at " + std::to_string(m.created_unix) + " in " + where;
  }
  std::printf("%zu models, %d copies in a second file\n", first.size(), copies);
  EXPECT_TRUE(shadowed.empty()) << "one family, two different models:" << shadowed;
}

}  // namespace
}  // namespace blocktune
