// The connector's info string: accepted forms, defaults, round trips and clear refusals.
#include <gtest/gtest.h>

#include "hdf5_vol/info_text.hpp"

namespace larder::vol {
namespace {

InfoText parse_ok(std::string_view text) {
  ParsedInfo p = parse_info_text(text);
  EXPECT_TRUE(p.info.has_value()) << text << ": " << p.error;
  return p.info.value_or(InfoText{});
}

std::string parse_error(std::string_view text) {
  ParsedInfo p = parse_info_text(text);
  EXPECT_FALSE(p.info.has_value()) << text << " was accepted";
  return p.error;
}

TEST(VolInfoTextTest, ConventionalStringMeansNativeBelow) {
  const InfoText info = parse_ok("under_vol=0;under_info={}");
  EXPECT_EQ(info.under_vol, "0");
  EXPECT_EQ(info.under_info, "");
  EXPECT_EQ(info.start, LARDER_VOL_START_AUTO);
  EXPECT_TRUE(info.cache);
}

TEST(VolInfoTextTest, EmptyStringTakesEveryDefault) {
  EXPECT_EQ(parse_ok(""), InfoText{});
  EXPECT_EQ(parse_ok("   "), InfoText{});
}

TEST(VolInfoTextTest, NestedUnderInfoKeepsItsBracesAndSemicolons) {
  const InfoText info = parse_ok("under_vol=1;under_info={under_vol=0;under_info={}}");
  EXPECT_EQ(info.under_vol, "1");
  EXPECT_EQ(info.under_info, "under_vol=0;under_info={}");
}

TEST(VolInfoTextTest, OwnOptionsInAnyOrderWithSpaces) {
  const InfoText info = parse_ok(" start = world ; cache=off;under_vol = native ; ");
  EXPECT_EQ(info.start, LARDER_VOL_START_WORLD);
  EXPECT_FALSE(info.cache);
  EXPECT_EQ(info.under_vol, "native");
  EXPECT_EQ(parse_ok("start=local").start, LARDER_VOL_START_LOCAL);
  EXPECT_EQ(parse_ok("start=never").start, LARDER_VOL_START_NEVER);
  EXPECT_TRUE(parse_ok("cache=on").cache);
}

TEST(VolInfoTextTest, FormatRoundTrips) {
  for (const char* text :
       {"", "under_vol=0;under_info={}", "start=world;under_vol=512",
        "cache=off;start=never;under_vol=1;under_info={under_vol=0;under_info={}}"}) {
    const InfoText info = parse_ok(text);
    EXPECT_EQ(parse_ok(format_info_text(info)), info) << text;
  }
  EXPECT_EQ(format_info_text(InfoText{}), "under_vol=0;under_info={}");
}

TEST(VolInfoTextTest, ConnectorValuesAreNumbersUpTo65535) {
  EXPECT_EQ(connector_value("0"), 0);
  EXPECT_EQ(connector_value("65535"), 65535);
  EXPECT_EQ(connector_value("65536"), std::nullopt);
  EXPECT_EQ(connector_value("native"), std::nullopt);
  EXPECT_EQ(connector_value("-1"), std::nullopt);
}

TEST(VolInfoTextTest, BadStringsAreRefusedWithTheReason) {
  EXPECT_NE(parse_error("under_vol=abc!").find("not a connector value"), std::string::npos);
  EXPECT_NE(parse_error("under_vol=99999").find("0-65535"), std::string::npos);
  EXPECT_NE(parse_error("under_vol=").find("under_vol"), std::string::npos);
  EXPECT_NE(parse_error("under_info={").find("never closed"), std::string::npos);
  EXPECT_NE(parse_error("under_info=}").find("closes nothing"), std::string::npos);
  EXPECT_NE(parse_error("under_info={a}{b}").find("one brace-enclosed"), std::string::npos);
  EXPECT_NE(parse_error("under_info=abc").find("one brace-enclosed"), std::string::npos);
  EXPECT_NE(parse_error("colour=blue").find("unknown key 'colour'"), std::string::npos);
  EXPECT_NE(parse_error("under_vol").find("not key=value"), std::string::npos);
  EXPECT_NE(parse_error("start=sometimes").find("auto, world, local, never"), std::string::npos);
  EXPECT_NE(parse_error("cache=maybe").find("on or off"), std::string::npos);
  EXPECT_NE(parse_error("under_vol=0;under_vol=1").find("given twice"), std::string::npos);
  // Every message names the string and shows a good one.
  const std::string e = parse_error("colour=blue");
  EXPECT_NE(e.find("bad larder connector info 'colour=blue'"), std::string::npos) << e;
  EXPECT_NE(e.find("under_vol=0;under_info={}"), std::string::npos) << e;
}

TEST(VolInfoTextTest, LongStringsAreFine) {
  const std::string nested(1000, 'x');
  const InfoText info = parse_ok("under_vol=7;under_info={" + nested + "}");
  EXPECT_EQ(info.under_info, nested);
}

}  // namespace
}  // namespace larder::vol
