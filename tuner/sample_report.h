// The sampler's report as a message (for --json) and as text.
#ifndef BLOCKTUNE_TUNER_SAMPLE_REPORT_H_
#define BLOCKTUNE_TUNER_SAMPLE_REPORT_H_

#include <ostream>
#include <vector>

#include "tuner/domain.pb.h"
#include "tuner/sampler.h"

namespace blocktune {

tuner::SamplingReport ToProto(const SamplingReport& report,
                              const std::vector<Candidate>& listed);
// Acceptance, rejections by rule, draws per second, and each parameter's
// marginal among the accepted samples.
void PrintReport(const tuner::SamplingReport& report, std::ostream& out);

}  // namespace blocktune

#endif  // BLOCKTUNE_TUNER_SAMPLE_REPORT_H_
