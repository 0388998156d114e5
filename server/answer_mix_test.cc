#include "server/answer_mix.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace blocktune {
namespace {

// (family, rank) pairs, fastest first.
using Ranked = std::vector<std::pair<std::string, int>>;

Ranked Keep(Ranked r, size_t k) {
  KeepEachFamilysFastest(&r, k, [](const auto& e) { return e.first; });
  return r;
}

TEST(AnswerMixTest, EachFamilysFastestStaysThenTheFastestOfTheRest) {
  const Ranked r = {{"a", 1}, {"a", 2}, {"a", 3}, {"b", 4}, {"a", 5}, {"c", 6}};
  // k = 3: each family's fastest (a1, b4, c6).
  EXPECT_EQ(Keep(r, 3), (Ranked{{"a", 1}, {"b", 4}, {"c", 6}}));
  // k = 4: and the fastest of the rest (a2), in ranked order.
  EXPECT_EQ(Keep(r, 4), (Ranked{{"a", 1}, {"a", 2}, {"b", 4}, {"c", 6}}));
  // More families than k: the k fastest families' fastest.
  EXPECT_EQ(Keep(r, 2), (Ranked{{"a", 1}, {"b", 4}}));
  // k = 1 is the fastest of all; k at or above the size keeps all.
  EXPECT_EQ(Keep(r, 1), (Ranked{{"a", 1}}));
  EXPECT_EQ(Keep(r, 6), r);
  EXPECT_EQ(Keep(r, 10), r);
  EXPECT_EQ(Keep({}, 3), Ranked{});
}

}  // namespace
}  // namespace blocktune
