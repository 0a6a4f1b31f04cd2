#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

namespace strata::engine {
namespace {

TEST(StopMatcherTest, WithoutStopsEverythingPassesThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("hello").text, "hello");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcherTest, StopSplitAcrossPiecesIsNeverShown) {
  StopMatcher m({"</end>"});
  EXPECT_EQ(m.push("abc</").text, "abc");  // "</" may begin the stop string: held back
  StopMatcher::Output out = m.push("en");
  EXPECT_EQ(out.text, "");
  EXPECT_FALSE(out.stopped);
  out = m.push("d>tail");
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "");
}

TEST(StopMatcherTest, HeldTextIsReleasedWhenItStopsMatching) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("x ST").text, "x ");
  EXPECT_EQ(m.push("ART").text, "START");
  EXPECT_EQ(m.push("ST").text, "");
  EXPECT_EQ(m.flush(), "ST");
}

TEST(StopMatcherTest, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w"});
  StopMatcher::Output out = m.push("hello world");
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "hel");
}

TEST(StopMatcherTest, HoldsMultiByteCharactersWhole) {
  StopMatcher m({"\u00e9!"});                  // "é!"
  EXPECT_EQ(m.push("caf\u00e9").text, "caf");  // the "é" may begin the stop string
  EXPECT_EQ(m.push("?").text, "\u00e9?");
}

}  // namespace
}  // namespace strata::engine
