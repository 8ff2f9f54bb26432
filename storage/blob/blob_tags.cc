#include "storage/blob/blob_tags.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace leasehold::storage {
namespace {

constexpr size_t kMaxTags = 10;
constexpr size_t kMaxKeyLength = 128;
constexpr size_t kMaxValueLength = 256;
// Parentheses nest at most this deep, and an expression holds at most this many comparisons: a
// hostile header cannot recurse the parser or the evaluation off its stack.
constexpr int kMaxDepth = 32;
constexpr int kMaxComparisons = 256;

bool TagCharacter(char c) {
  return absl::ascii_isalnum(c) || std::string_view(" +-./:=_").find(c) != std::string_view::npos;
}

bool AllTagCharacters(std::string_view s) {
  for (char c : s) {
    if (!TagCharacter(c)) return false;
  }
  return true;
}

}  // namespace

std::optional<TagSetError> CheckTagSet(
    const std::vector<std::pair<std::string, std::string>>& tags) {
  const TagSetError too_large{"TagsTooLarge",
                              "The tags specified exceed the maximum permissible limit."};
  if (tags.size() > kMaxTags) return too_large;
  std::set<std::string_view> seen;
  for (const auto& [key, value] : tags) {
    if (key.empty())
      return TagSetError{"EmptyTagName", "The name of one of the tag key-value pairs is empty."};
    if (key.size() > kMaxKeyLength || value.size() > kMaxValueLength) return too_large;
    if (!AllTagCharacters(key) || !AllTagCharacters(value)) {
      return TagSetError{
          "InvalidTag",
          "The tags specified are invalid. It contains characters that are not permitted."};
    }
    if (!seen.insert(key).second) {
      return TagSetError{"DuplicateTagNames", "The tags specified contain duplicate names."};
    }
  }
  return std::nullopt;
}

struct TagCondition::Node {
  enum Kind { kCompare, kAnd, kOr } kind = kCompare;
  enum Op { kEq, kNe, kLt, kLe, kGt, kGe } op = kEq;
  std::string key, value;                   // kCompare
  std::shared_ptr<const Node> left, right;  // kAnd, kOr
};

namespace {

using Node = TagCondition::Node;
using NodePtr = std::shared_ptr<const Node>;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  NodePtr ParseAll() {
    NodePtr root = Or(0);
    SkipSpace();
    return root != nullptr && pos_ == text_.size() ? root : nullptr;
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) ++pos_;
  }

  // Consumes a keyword (any case) that is not the prefix of a longer bare word.
  bool Keyword(std::string_view word) {
    SkipSpace();
    if (text_.size() - pos_ < word.size()) return false;
    const std::string_view next = text_.substr(pos_, word.size());
    if (!absl::EqualsIgnoreCase(absl::string_view(next.data(), next.size()),
                                absl::string_view(word.data(), word.size()))) {
      return false;
    }
    const size_t end = pos_ + word.size();
    if (end < text_.size() && TagCharacter(text_[end]) && text_[end] != ' ' && text_[end] != '=')
      return false;
    pos_ = end;
    return true;
  }

  // operand (keyword operand)*, folded left into `kind` nodes: OR over ANDs, AND over terms.
  NodePtr Chain(Node::Kind kind, std::string_view keyword, NodePtr (Parser::*operand)(int),
                int depth) {
    NodePtr left = (this->*operand)(depth);
    while (left != nullptr && Keyword(keyword)) {
      NodePtr right = (this->*operand)(depth);
      if (right == nullptr) return nullptr;
      auto node = std::make_shared<Node>();
      node->kind = kind;
      node->left = std::move(left);
      node->right = std::move(right);
      left = std::move(node);
    }
    return left;
  }
  NodePtr Or(int depth) { return Chain(Node::kOr, "or", &Parser::And, depth); }
  NodePtr And(int depth) { return Chain(Node::kAnd, "and", &Parser::Term, depth); }

  NodePtr Term(int depth) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      if (depth == kMaxDepth) return nullptr;
      ++pos_;
      NodePtr inner = Or(depth + 1);
      SkipSpace();
      if (inner == nullptr || pos_ == text_.size() || text_[pos_] != ')') return nullptr;
      ++pos_;
      return inner;
    }
    if (++comparisons_ > kMaxComparisons) return nullptr;
    auto node = std::make_shared<Node>();
    if (!Key(&node->key) || !Operator(&node->op) || !Quoted('\'', &node->value)) return nullptr;
    if (!AllTagCharacters(node->value)) return nullptr;
    return node;
  }

  // A quoted string; the quote doubled stands for itself.
  bool Quoted(char quote, std::string* out) {
    SkipSpace();
    if (pos_ == text_.size() || text_[pos_] != quote) return false;
    for (++pos_; pos_ < text_.size(); ++pos_) {
      if (text_[pos_] != quote) {
        out->push_back(text_[pos_]);
      } else if (pos_ + 1 < text_.size() && text_[pos_ + 1] == quote) {
        out->push_back(quote);
        ++pos_;
      } else {
        ++pos_;
        return true;
      }
    }
    return false;
  }

  bool Key(std::string* out) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '"') {
      if (!Quoted('"', out)) return false;
    } else {
      // A bare key ends at a space or an operator ('=' is a tag character, but not in a bare key).
      while (pos_ < text_.size() && TagCharacter(text_[pos_]) && text_[pos_] != ' ' &&
             text_[pos_] != '=') {
        out->push_back(text_[pos_++]);
      }
    }
    return !out->empty() && out->size() <= kMaxKeyLength && AllTagCharacters(*out);
  }

  bool Operator(Node::Op* op) {
    SkipSpace();
    static constexpr std::pair<std::string_view, Node::Op> kOps[] = {
        {"<>", Node::kNe}, {"<=", Node::kLe}, {">=", Node::kGe},
        {"=", Node::kEq},  {"<", Node::kLt},  {">", Node::kGt}};
    for (const auto& [spelling, value] : kOps) {
      if (text_.substr(pos_, spelling.size()) == spelling) {
        pos_ += spelling.size();
        *op = value;
        return true;
      }
    }
    return false;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int comparisons_ = 0;
};

bool Evaluate(const Node& node, const google::protobuf::Map<std::string, std::string>& tags) {
  switch (node.kind) {
    case Node::kAnd:
      return Evaluate(*node.left, tags) && Evaluate(*node.right, tags);
    case Node::kOr:
      return Evaluate(*node.left, tags) || Evaluate(*node.right, tags);
    case Node::kCompare:
      break;
  }
  auto it = tags.find(node.key);
  if (it == tags.end()) return false;
  const int order = it->second.compare(node.value);
  switch (node.op) {
    case Node::kEq:
      return order == 0;
    case Node::kNe:
      return order != 0;
    case Node::kLt:
      return order < 0;
    case Node::kLe:
      return order <= 0;
    case Node::kGt:
      return order > 0;
    case Node::kGe:
      return order >= 0;
  }
  return false;
}

}  // namespace

std::optional<TagCondition> TagCondition::Parse(std::string_view text) {
  NodePtr root = Parser(text).ParseAll();
  if (root == nullptr) return std::nullopt;
  return TagCondition(std::move(root));
}

bool TagCondition::Matches(const google::protobuf::Map<std::string, std::string>& tags) const {
  return Evaluate(*root_, tags);
}

}  // namespace leasehold::storage
