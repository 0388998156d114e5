// Issue 22: a campaign's work items on every store (memory, SQLite, a real
// PostgreSQL): planning under the campaign's lock, claims that never hand
// one item to two holders, leases that run out, commits that a holder who
// lost its item cannot make, and the generation counters.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "server/both_stores_test.h"

namespace blocktune {
namespace {

using namespace ::blocktune::testing;  // NOLINT

class WorkItemsTest : public BothStoresTest {
 protected:
  void SetUp() override {
    BothStoresTest::SetUp();
    if (IsSkipped()) return;
    CampaignSpec spec;
    spec.max_samples = 100;
    auto c = store_->CreateCampaign(spec);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    id_ = c->id;
  }

  // Plans `n` items of `count` candidates, one PlanWork each; the record's
  // message says how many candidates are planned.
  void PlanItems(int n, int64_t count) {
    for (int i = 0; i < n; ++i) {
      auto r = store_->PlanWork(
          id_, [&](CampaignRecord& record, const WorkTotals& totals)
                   -> StatusOr<std::vector<WorkItem>> {
            record.state = CampaignState::kRunning;
            record.message = "planned " + std::to_string(totals.seqs + count);
            WorkItem item;
            item.count = count;
            item.candidates = "item from " + std::to_string(totals.seqs);
            return std::vector<WorkItem>{item};
          });
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }

  // Samples of campaign id_ with these seqs.
  std::vector<SampleRecord> Samples(int64_t first, int64_t count) {
    std::vector<SampleRecord> out;
    for (int64_t seq = first; seq < first + count; ++seq) {
      SampleRecord s = TestSample(1, seq);
      s.campaign_id = id_;
      s.seq = seq;
      out.push_back(s);
    }
    return out;
  }

  // Commits `work` for `holder`, counting its samples into the record.
  StatusOr<CampaignRecord> Commit(const std::string& holder,
                                  const WorkCommit& work,
                                  WorkTotals* seen = nullptr) {
    return store_->CommitWork(
        id_, holder, work,
        [&](CampaignRecord& record, const WorkTotals& totals) -> Status {
          record.samples_ok += static_cast<int64_t>(work.samples.size());
          if (seen) *seen = totals;
          return OkStatus();
        });
  }

  int64_t id_ = 0;
};

TEST_P(WorkItemsTest, PlanNumbersItemsOnAndWritesTheRecordWithThem) {
  PlanItems(3, 10);
  auto record = store_->GetCampaign(id_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->state, CampaignState::kRunning);
  EXPECT_EQ(record->message, "planned 30");
  auto items = store_->ListWork(id_);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  ASSERT_EQ(items->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*items)[i].first_seq, 10 * i);
    EXPECT_EQ((*items)[i].count, 10);
    EXPECT_EQ((*items)[i].state, WorkState::kQueued);
    EXPECT_TRUE((*items)[i].candidates.empty());  // listings leave them out
  }
  // A plan that fails writes nothing.
  auto failed = store_->PlanWork(
      id_, [](CampaignRecord& record,
              const WorkTotals&) -> StatusOr<std::vector<WorkItem>> {
        record.message = "never stored";
        return Internal("the sampler broke");
      });
  EXPECT_EQ(failed.status().code(), StatusCode::kInternal);
  EXPECT_EQ(store_->GetCampaign(id_)->message, "planned 30");
  EXPECT_EQ(store_->ListWork(id_)->size(), 3u);
  EXPECT_EQ(store_->PlanWork(99, [](CampaignRecord&, const WorkTotals&)
                                     -> StatusOr<std::vector<WorkItem>> {
                        return std::vector<WorkItem>();
                      })
                .status()
                .code(),
            StatusCode::kNotFound);
}

TEST_P(WorkItemsTest, ConcurrentClaimersNeverGetTheSameItem) {
  PlanItems(40, 5);
  std::mutex mu;
  std::map<int64_t, std::string> claimed_by;
  std::map<int64_t, std::string> candidates;
  std::atomic<int> errors{0};
  std::vector<std::thread> claimers;
  for (int t = 0; t < 6; ++t) {
    claimers.emplace_back([&, t] {
      const std::string holder = "daemon-" + std::to_string(t);
      while (true) {
        auto c = store_->ClaimWork(id_, holder, 60);
        if (!c.ok()) {
          ++errors;
          ADD_FAILURE() << c.status().ToString();
          return;
        }
        if (!*c) return;
        std::lock_guard lock(mu);
        EXPECT_TRUE(claimed_by.emplace((*c)->item.first_seq, holder).second)
            << "item " << (*c)->item.first_seq << " claimed twice";
        candidates[(*c)->item.first_seq] = (*c)->item.candidates;
        EXPECT_EQ((*c)->item.attempts, 1);
      }
    });
  }
  for (auto& t : claimers) t.join();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(claimed_by.size(), 40u);
  for (const auto& [first, text] : candidates)
    EXPECT_EQ(text, "item from " + std::to_string(first));
  auto items = store_->ListWork(id_);
  ASSERT_TRUE(items.ok());
  for (const WorkItem& w : *items) {
    EXPECT_EQ(w.state, WorkState::kLeased);
    EXPECT_EQ(w.holder, claimed_by[w.first_seq]) << "item " << w.first_seq;
  }
}

TEST_P(WorkItemsTest, ALeaseThatRunsOutGoesToTheNextClaimerWithWhatIsStored) {
  PlanItems(1, 4);
  auto a = store_->ClaimWork(id_, "a", 1);
  ASSERT_TRUE(a.ok() && *a) << a.status().ToString();
  EXPECT_TRUE((*a)->stored_seqs.empty());
  // a stores two of its four samples, then goes quiet.
  WorkCommit part;
  part.items = {0};
  part.samples = Samples(0, 2);
  ASSERT_TRUE(Commit("a", part).ok());
  auto none = store_->ClaimWork(id_, "b", 60);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none) << "the lease is a's for a second";
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  auto b = store_->ClaimWork(id_, "b", 60);
  ASSERT_TRUE(b.ok() && *b) << b.status().ToString();
  EXPECT_EQ((*b)->item.first_seq, 0);
  EXPECT_EQ((*b)->item.attempts, 2);
  EXPECT_EQ((*b)->stored_seqs, (std::vector<int64_t>{0, 1}));
  // a comes back: it cannot renew or commit what b holds now, and nothing
  // of its commit is stored.
  auto lost = store_->RenewWork(id_, "a", {0}, 60);
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(*lost, std::vector<int64_t>{0});
  WorkCommit late;
  late.items = {0};
  late.finished = {0};
  late.samples = Samples(2, 2);
  auto refused = Commit("a", late);
  EXPECT_EQ(refused.status().code(), StatusCode::kAborted)
      << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("seq 0"), std::string::npos);
  StoreFilter mine;
  mine.campaign_id = id_;
  EXPECT_EQ(*store_->CountSamples(mine), 2);
  // b finishes the item: the other two samples, exactly once.
  WorkTotals totals;
  auto done = Commit("b", late, &totals);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->samples_ok, 4);
  EXPECT_EQ(totals.items, 1);
  EXPECT_EQ(totals.open, 0);
  EXPECT_EQ(totals.seqs, 4);
  std::set<int64_t> seqs;
  auto samples = store_->ListSamples(mine);
  ASSERT_TRUE(samples.ok());
  for (const SampleRecord& s : *samples)
    EXPECT_TRUE(seqs.insert(s.seq).second) << "seq " << s.seq << " twice";
  EXPECT_EQ(seqs, (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(store_->ListWork(id_)->front().state, WorkState::kDone);
  auto after = store_->ClaimWork(id_, "c", 60);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(*after) << "a done item is never claimed";
}

TEST_P(WorkItemsTest, CommitsCheckHoldersAndSeqsAndCountOpenItems) {
  PlanItems(2, 3);
  ASSERT_TRUE(store_->ClaimWork(id_, "a", 60).ok());
  ASSERT_TRUE(store_->ClaimWork(id_, "b", 60).ok());
  WorkCommit not_mine;
  not_mine.items = {3};  // b's
  not_mine.samples = Samples(3, 1);
  EXPECT_EQ(Commit("a", not_mine).status().code(), StatusCode::kAborted);
  WorkCommit first;
  first.items = {0};
  first.finished = {0};
  first.samples = Samples(0, 3);
  WorkTotals totals;
  ASSERT_TRUE(Commit("a", first, &totals).ok());
  EXPECT_EQ(totals.open, 1);  // b's
  // A sample stored already is refused, and so is the whole commit.
  WorkCommit again;
  again.items = {3};
  again.samples = Samples(3, 1);
  again.samples.push_back(Samples(0, 1).front());
  EXPECT_EQ(Commit("b", again).status().code(), StatusCode::kAlreadyExists);
  // A commit whose update fails writes nothing.
  WorkCommit rest;
  rest.items = {3};
  rest.finished = {3};
  rest.samples = Samples(3, 3);
  auto failed = store_->CommitWork(
      id_, "b", rest, [](CampaignRecord&, const WorkTotals&) {
        return Internal("the cursor is corrupt");
      });
  EXPECT_EQ(failed.status().code(), StatusCode::kInternal);
  StoreFilter mine;
  mine.campaign_id = id_;
  EXPECT_EQ(*store_->CountSamples(mine), 3);
  ASSERT_TRUE(Commit("b", rest, &totals).ok());
  EXPECT_EQ(totals.open, 0);
  EXPECT_EQ(store_->GetCampaign(id_)->samples_ok, 6);
  EXPECT_EQ(*store_->CountSamples(mine), 6);
}

TEST_P(WorkItemsTest, ReleasedItemsAreClaimedAtOnce) {
  PlanItems(2, 3);
  ASSERT_TRUE(store_->ClaimWork(id_, "a", 3600).ok());
  ASSERT_TRUE(store_->ClaimWork(id_, "a", 3600).ok());
  EXPECT_FALSE(*store_->ClaimWork(id_, "b", 60));
  // Only the holder's own items go back.
  ASSERT_TRUE(store_->ReleaseWork(id_, "b", {0, 3}).ok());
  EXPECT_FALSE(*store_->ClaimWork(id_, "b", 60));
  ASSERT_TRUE(store_->ReleaseWork(id_, "a", {3}).ok());
  auto b = store_->ClaimWork(id_, "b", 60);
  ASSERT_TRUE(b.ok() && *b);
  EXPECT_EQ((*b)->item.first_seq, 3);
  EXPECT_EQ((*b)->item.attempts, 2);
}

TEST_P(WorkItemsTest, GenerationGrowsWithTunedAndModelWritesOnly) {
  auto g0 = store_->Generation();
  ASSERT_TRUE(g0.ok()) << g0.status().ToString();
  WriteBatch samples;
  samples.samples = {TestSample(1, 1)};
  ASSERT_TRUE(store_->Commit(samples).ok());
  EXPECT_EQ(*store_->Generation(), *g0);
  WriteBatch tuned;
  tuned.tuned = {TestTuned(TestGemm(64, 64, 64), TestShape(64, 64), 1e-5)};
  ASSERT_TRUE(store_->Commit(tuned).ok());
  auto g1 = store_->Generation();
  EXPECT_EQ(g1->tuned, g0->tuned + 1);
  EXPECT_EQ(g1->models, g0->models);
}

INSTANTIATE_TEST_SUITE_P(Stores, WorkItemsTest, AllStoreKinds(),
                         StoreKindName);

}  // namespace
}  // namespace blocktune
