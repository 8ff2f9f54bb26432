// Azure's tag-set rules and the x-ms-if-tags expression language (storage/blob/blob_tags.h).
#include "storage/blob/blob_tags.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace leasehold::storage {
namespace {

std::string Problem(std::vector<std::pair<std::string, std::string>> tags) {
  auto error = CheckTagSet(tags);
  return error ? error->code : "";
}

TEST(TagSetTest, RulesAndTheirCodes) {
  EXPECT_EQ(Problem({}), "");
  EXPECT_EQ(Problem({{"a-Z 0+9./:=_", ""}, {std::string(128, 'k'), std::string(256, 'v')}}), "");
  std::vector<std::pair<std::string, std::string>> eleven;
  for (int i = 0; i < 11; ++i) eleven.emplace_back("k" + std::to_string(i), "v");
  EXPECT_EQ(Problem(eleven), "TagsTooLarge");
  EXPECT_EQ(Problem({{std::string(129, 'k'), "v"}}), "TagsTooLarge");
  EXPECT_EQ(Problem({{"k", std::string(257, 'v')}}), "TagsTooLarge");
  EXPECT_EQ(Problem({{"", "v"}}), "EmptyTagName");
  EXPECT_EQ(Problem({{"k#", "v"}}), "InvalidTag");
  EXPECT_EQ(Problem({{"k", "v\n"}}), "InvalidTag");
  EXPECT_EQ(Problem({{"k", "v"}, {"K", "v"}}), "");  // keys are case-sensitive
  EXPECT_EQ(Problem({{"k", "v"}, {"k", "w"}}), "DuplicateTagNames");
}

bool Meets(std::string_view expression, std::map<std::string, std::string> tags) {
  auto condition = TagCondition::Parse(expression);
  EXPECT_TRUE(condition.has_value()) << expression;
  google::protobuf::Map<std::string, std::string> map(tags.begin(), tags.end());
  return condition.has_value() && condition->Matches(map);
}

TEST(TagConditionTest, ComparesOrdinally) {
  const std::map<std::string, std::string> tags = {{"n", "05"}, {"Status", "Done"}};
  EXPECT_TRUE(Meets("n = '05'", tags));
  EXPECT_TRUE(Meets("n <> '5'", tags));
  EXPECT_TRUE(Meets("n < '5'", tags));  // strings, not numbers
  EXPECT_TRUE(Meets("n <= '05' AND n >= '05'", tags));
  EXPECT_FALSE(Meets("n > '05'", tags));
  EXPECT_TRUE(Meets("\"Status\" = 'Done'", tags));
  EXPECT_FALSE(Meets("status = 'Done'", tags));  // keys are case-sensitive
}

TEST(TagConditionTest, AMissingKeyFailsEveryComparison) {
  for (const char* op : {"=", "<>", "<", "<=", ">", ">="}) {
    EXPECT_FALSE(Meets(std::string("absent ") + op + " 'x'", {{"k", "v"}})) << op;
  }
}

TEST(TagConditionTest, AndBindsTighterThanOr) {
  const std::map<std::string, std::string> tags = {{"a", "1"}};
  EXPECT_TRUE(Meets("a = '1' or b = '1' and c = '1'", tags));
  EXPECT_FALSE(Meets("(a = '1' OR b = '1') AND c = '1'", tags));
  EXPECT_TRUE(Meets("((a='1'))", tags));
}

TEST(TagConditionTest, QuotedKeysMayHoldSpacesButNoQuote) {
  EXPECT_TRUE(Meets("\"a b=c\" = 'd e'", {{"a b=c", "d e"}}));
  // A doubled quote stands for a quote, which is not a tag character: such a key or value is
  // refused.
  EXPECT_FALSE(TagCondition::Parse("\"k\"\"\" = 'x'").has_value());
  EXPECT_FALSE(TagCondition::Parse("k = 'it''s'").has_value());
}

// One comparison inside `depth` pairs of parentheses.
std::string Nested(size_t depth) {
  std::string text(depth, '(');
  text.append("a = 'x'");
  text.append(depth, ')');
  return text;
}

TEST(TagConditionTest, RefusesWhatIsNotAnExpression) {
  for (const char* bad :
       {"", "a", "a = b", "a == 'x'", "a = 'x", "(a = 'x'", "a = 'x')", "a = 'x' and",
        "a = 'x' xor b = 'y'", "a#b = 'x'", "a = 'x#'", "'a' = 'x'", "a = 'x' andb = 'y'"}) {
    EXPECT_FALSE(TagCondition::Parse(bad).has_value()) << bad;
  }
  // Nesting and length are bounded, so a hostile header cannot exhaust the stack.
  EXPECT_FALSE(TagCondition::Parse(Nested(1000)).has_value());
  EXPECT_TRUE(TagCondition::Parse(Nested(10)).has_value());
  std::string many = "a = 'x'";
  for (int i = 0; i < 300; ++i) many += " and a = 'x'";
  EXPECT_FALSE(TagCondition::Parse(many).has_value());
}

}  // namespace
}  // namespace leasehold::storage
