#include "server/store_migrate.h"

#include <sys/stat.h>

#include <map>

#include "server/pg_store.h"

namespace blocktune {

StatusOr<MigrateCounts> MigrateStore(TuningStore& from, TuningStore& to) {
  const StoreFilter all;
  BT_ASSIGN_OR_RETURN(int64_t target_samples, to.CountSamples(all));
  BT_ASSIGN_OR_RETURN(int64_t target_tuned, to.CountTuned());
  BT_ASSIGN_OR_RETURN(auto target_models, to.ListModels(all));
  BT_ASSIGN_OR_RETURN(auto target_campaigns, to.ListCampaigns());
  if (target_samples + target_tuned > 0 || !target_models.empty() ||
      !target_campaigns.empty()) {
    return FailedPrecondition(
        "--to: " + to.Describe() + " is not empty (" +
        std::to_string(target_samples) + " samples, " +
        std::to_string(target_tuned) + " tuned answers, " +
        std::to_string(target_models.size()) + " models, " +
        std::to_string(target_campaigns.size()) +
        " campaigns); migrate into a new database");
  }
  BT_ASSIGN_OR_RETURN(auto campaigns, from.ListCampaigns());
  BT_ASSIGN_OR_RETURN(auto samples, from.ListSamples(all));
  BT_ASSIGN_OR_RETURN(auto models, from.ListModels(all));
  BT_ASSIGN_OR_RETURN(auto tuned, from.ListTuned(all));

  MigrateCounts counts;
  WriteBatch batch;
  std::map<int64_t, int64_t> campaign_ids;
  for (const CampaignRecord& c : campaigns) {
    BT_ASSIGN_OR_RETURN(CampaignRecord created, to.CreateCampaign(c.spec));
    campaign_ids[c.id] = created.id;
    CampaignRecord copy = c;
    copy.id = created.id;
    batch.campaign_updates.push_back(std::move(copy));
    ++counts.campaigns;
  }
  std::map<int64_t, int64_t> model_ids;
  if (!models.empty()) {
    WriteBatch model_batch;
    model_batch.models = models;
    BT_ASSIGN_OR_RETURN(CommitResult committed, to.Commit(model_batch));
    for (size_t i = 0; i < models.size(); ++i)
      model_ids[models[i].id] = committed.model_ids[i];
    counts.models = static_cast<int64_t>(models.size());
  }
  for (SampleRecord& s : samples) {
    auto it = campaign_ids.find(s.campaign_id);
    if (it != campaign_ids.end()) s.campaign_id = it->second;
  }
  for (TunedRecord& t : tuned) {
    auto it = model_ids.find(t.model_id);
    if (it != model_ids.end()) t.model_id = it->second;
  }
  counts.samples = static_cast<int64_t>(samples.size());
  counts.tuned = static_cast<int64_t>(tuned.size());
  batch.samples = std::move(samples);
  batch.tuned = std::move(tuned);
  BT_RETURN_IF_ERROR(to.Commit(batch).status());
  return counts;
}

StatusOr<std::string> MigrateDatabases(const std::string& from,
                                       const std::string& to) {
  struct stat st {};
  if (from.empty() || IsPostgresUri(from) || stat(from.c_str(), &st) != 0) {
    return InvalidArgument("--from: " + from +
                           " is not an existing SQLite store file");
  }
  if (to.empty()) return InvalidArgument("--to: empty");
  auto source = OpenSqliteStore(from);
  if (!source.ok()) {
    return Status(source.status().code(),
                  "--from: " + std::string(source.status().message()));
  }
  auto target = IsPostgresUri(to) ? OpenPostgresStore(to) : OpenSqliteStore(to);
  if (!target.ok()) {
    return Status(target.status().code(),
                  "--to: " + std::string(target.status().message()));
  }
  BT_ASSIGN_OR_RETURN(MigrateCounts counts, MigrateStore(**source, **target));
  return "copied " + std::to_string(counts.samples) + " samples, " +
         std::to_string(counts.tuned) + " tuned answers, " +
         std::to_string(counts.models) + " models and " +
         std::to_string(counts.campaigns) + " campaigns from " + from + " to " +
         (*target)->Describe();
}

}  // namespace blocktune
