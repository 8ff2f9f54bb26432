// The Set/Get Blob Tags document (server/blob/blob_tag_document.h): its exact shape, Azure's codes,
// and bodies built to exhaust the parser's stack.
#include "server/blob/blob_tag_document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

using ::testing::Pair;
using ::testing::UnorderedElementsAre;

std::string Code(const std::string& xml) {
  internalpb::BlobRequest request;
  absl::Status error = ParseTagDocument(xml, &request);
  return error.ok() ? "" : BlobErrorOf(error).code;
}

TEST(TagDocumentTest, ReadsTagsInEitherFieldOrderAroundComments) {
  internalpb::BlobRequest request;
  ASSERT_TRUE(
      ParseTagDocument("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><Tags><TagSet>"
                       "<Tag><Key>a</Key><Value>1</Value></Tag><!-- c -->"
                       "<Tag><Value></Value><Key>b<!-- c -->c</Key></Tag></TagSet></Tags>",
                       &request)
          .ok());
  EXPECT_THAT(request.tags(), UnorderedElementsAre(Pair("a", "1"), Pair("bc", "")));
}

TEST(TagDocumentTest, AnythingButExactlyThatShapeIsInvalidXml) {
  EXPECT_EQ(Code("<Tags><TagSet/></Tags>"), "");
  for (const char* bad :
       {"", "tags", "<Tags>", "<Tags/>", "<Tags><TagSet/><TagSet/></Tags>",
        "<Labels><TagSet/></Labels>", "<Tags><TagSet/></Tags><Tags/>",
        "<Tags><TagSet><Tag><Key>k</Key></Tag></TagSet></Tags>",
        "<Tags><TagSet><Tag><Key>k</Key><Value>v</Value><Value>w</Value></Tag></TagSet></Tags>",
        "<Tags><TagSet><Tag><Key><b/>k</Key><Value>v</Value></Tag></TagSet></Tags>",
        "<Tags><TagSet><Item/></TagSet></Tags>"}) {
    EXPECT_EQ(Code(bad), "InvalidXmlDocument") << bad;
  }
}

TEST(TagDocumentTest, TagRulesKeepTheirOwnCodes) {
  EXPECT_EQ(Code("<Tags><TagSet><Tag><Key>a#</Key><Value/></Tag></TagSet></Tags>"), "InvalidTag");
  EXPECT_EQ(Code("<Tags><TagSet><Tag><Key>k</Key><Value/></Tag><Tag><Key>k</Key><Value/></Tag></"
                 "TagSet></Tags>"),
            "DuplicateTagNames");
}

TEST(TagDocumentTest, DeepNestingIsRefusedBeforeParsing) {
  std::string numeric = "<Tags>", slashes = "<Tags>";
  for (int i = 0; i < 9000; ++i) numeric += "<1>";
  for (int i = 0; i < 9000; ++i) numeric += "</1>";
  for (int i = 0; i < 9000; ++i) slashes += "/>";
  for (int i = 0; i < 3000; ++i) slashes += "<TagSet>";
  EXPECT_EQ(Code(numeric + "</Tags>"), "InvalidXmlDocument");
  EXPECT_EQ(Code(slashes + "</Tags>"), "InvalidXmlDocument");
}

TEST(TagDocumentTest, GetBlobTagsBodyIsSortedByKey) {
  internalpb::BlobRecord record;
  EXPECT_EQ(TagDocument(record.tags()),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Tags><TagSet/></Tags>");
  (*record.mutable_tags())["z"] = "1";
  (*record.mutable_tags())["a"] = "2";
  EXPECT_EQ(TagSetXml(record.tags()),
            "<TagSet><Tag><Key>a</Key><Value>2</Value></Tag><Tag><Key>z</Key><Value>1</Value></"
            "Tag></TagSet>");
}

}  // namespace
}  // namespace leasehold::server
