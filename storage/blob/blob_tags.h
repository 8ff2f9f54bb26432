// Azure's blob index tags: the rules a blob's tag set must meet, and the x-ms-if-tags condition
// (a SQL-like expression over a blob's tags) that most blob operations accept.
//
// Both are pure functions of their input: the adapter uses them to refuse bad requests before
// proposing, and the state machine re-parses a proposed condition to evaluate it while applying.
// So the parser is part of the replicated behaviour: every member must run the same version of it
// (as of the rest of the state machine).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "google/protobuf/map.h"

namespace leasehold::storage {

// Azure's refusal of a tag set: HTTP 400 with this x-ms-error-code and message.
struct TagSetError {
  std::string code;
  std::string message;
};

// Checks tags in the order sent: at most 10; keys of 1-128 and values of 0-256 characters from
// letters, digits, space and + - . / : = _; no key twice (keys are case-sensitive).
std::optional<TagSetError> CheckTagSet(
    const std::vector<std::pair<std::string, std::string>>& tags);

// A parsed x-ms-if-tags expression:
//   expr := and ("OR" and)*          keywords in any case; AND binds tighter than OR
//   and  := term ("AND" term)*
//   term := "(" expr ")" | key op value
//   key  := "double-quoted" ("" for a quote) | a bare run of tag characters
//   op   := = | <> | < | <= | > | >=
//   value:= 'single-quoted' ('' for a quote)
// Comparisons are ordinal on the strings. A key the blob lacks makes its comparison false,
// whatever the operator, so a blob without tags meets no condition.
class TagCondition {
 public:
  // nullopt for a malformed expression.
  static std::optional<TagCondition> Parse(std::string_view text);

  bool Matches(const google::protobuf::Map<std::string, std::string>& tags) const;

  struct Node;  // defined in blob_tags.cc

 private:
  explicit TagCondition(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;
};

}  // namespace leasehold::storage
