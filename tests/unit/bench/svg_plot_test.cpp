#include "cli/svg_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace tk::cli {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

LineChart two_curves() {
  LineChart c;
  c.title = "Rate-distortion <quant>";
  c.x_label = "bits per value";
  c.y_label = "SQNR (dB)";
  c.series = {{"int8 & co", {8, 4, 2}, {40, 20, 8}, false, {}}, {"nf4", {4.1, 4.5}, {19, 22}, false, {}}};
  return c;
}

TEST(SvgLine, IsOneDocumentWithTitleLabelsAndLegend) {
  std::string svg = render_svg(two_curves());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<svg "), 1u);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
  EXPECT_NE(svg.find("Rate-distortion &lt;quant&gt;"), std::string::npos);  // escaped
  EXPECT_NE(svg.find(">bits per value<"), std::string::npos);
  EXPECT_NE(svg.find(">SQNR (dB)<"), std::string::npos);
  EXPECT_NE(svg.find(">int8 &amp; co<"), std::string::npos);
  EXPECT_NE(svg.find(">nf4<"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(SvgLine, OnePolylineAndOneMarkerPerPoint) {
  std::string svg = render_svg(two_curves());
  EXPECT_EQ(count(svg, "<g class=\"series\""), 2u);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle"), 5u);
}

// Points that are separate things (one scheme each) are not joined by a line, and each
// carries its label; the legend shows a marker for them.
TEST(SvgLine, PointsOnlySeriesAreLabelledMarkers) {
  LineChart c = two_curves();
  c.series[0].points_only = true;
  c.series[0].labels = {"int8", "int4", "int2 <x>"};
  std::string svg = render_svg(c);
  EXPECT_EQ(count(svg, "<polyline"), 1u);  // the other series only
  EXPECT_EQ(count(svg, "<circle"), 6u);    // five points and one legend marker
  EXPECT_NE(svg.find(">int4<"), std::string::npos);
  EXPECT_NE(svg.find(">int2 &lt;x&gt;<"), std::string::npos);
}

TEST(SvgLine, SkipsNonFiniteAndNonPositiveOnLogAxes) {
  LineChart c = two_curves();
  c.log_x = true;
  c.series[0].x = {8, std::numeric_limits<double>::quiet_NaN(), 0};
  c.series[1].y = {std::numeric_limits<double>::infinity(), 22};
  std::string svg = render_svg(c);
  EXPECT_EQ(count(svg, "<circle"), 2u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(SvgLine, RightAxisSeriesAreDashedWithSquares) {
  LineChart c = two_curves();
  c.y2_label = "silhouette";
  c.right = {{"silhouette", {8, 4, 2}, {0.9, 0.5, 0.1}, false, {}}};
  std::string svg = render_svg(c);
  EXPECT_EQ(count(svg, "<polyline"), 3u);
  EXPECT_EQ(count(svg, "stroke-dasharray"), 2u);  // the line and its legend sample
  EXPECT_EQ(count(svg, "width=\"7\" height=\"7\""), 3u);
  EXPECT_NE(svg.find(">silhouette<"), std::string::npos);
}

TEST(SvgLine, EmptyChartSaysSo) {
  LineChart c;
  c.title = "nothing";
  std::string svg = render_svg(c);
  EXPECT_NE(svg.find(">no data<"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 0u);
}

TEST(SvgBar, OneRectPerFiniteValuePlusLegend) {
  BarChart b;
  b.title = "Throughput";
  b.y_label = "MB/s";
  b.bar_names = {"compress", "decompress"};
  b.groups = {{"lossless", {900, 1500}}, {"bitx", {700, std::nan("")}}};
  std::string svg = render_svg(b);
  EXPECT_EQ(count(svg, "<g class=\"group\""), 2u);
  // 3 finite bars, 2 legend swatches, 1 background.
  EXPECT_EQ(count(svg, "<rect"), 6u);
  EXPECT_NE(svg.find(">MB/s<"), std::string::npos);
  EXPECT_NE(svg.find(">decompress<"), std::string::npos);
  EXPECT_NE(svg.find(">lossless<"), std::string::npos);
}

// Lossy MB/s beside lossless GB/s: on a linear axis the small bars would be a pixel or
// less; over more than two decades the axis is logarithmic and says so.
TEST(SvgBar, WideRangesUseALogAxisWhereSmallBarsShow) {
  BarChart b;
  b.y_label = "MB/s";
  b.bar_names = {"compress"};
  b.groups = {{"lossless", {2000}}, {"video", {3}}};
  std::string svg = render_svg(b);
  EXPECT_NE(svg.find(">MB/s (log scale)<"), std::string::npos);
  const size_t video = svg.find("data-name=\"video\"");
  ASSERT_NE(video, std::string::npos);
  const size_t h = svg.find("height=\"", video) + 8;
  EXPECT_GT(std::stod(svg.substr(h)), 20.0);  // tall enough to see
  b.groups = {{"lossless", {2000}}, {"bitx", {700}}};
  EXPECT_EQ(render_svg(b).find("log scale"), std::string::npos);
}

TEST(SvgStack, NestsDocumentsOneBelowTheOther) {
  BarChart b;
  b.title = "Throughput";
  b.bar_names = {"x"};
  b.groups = {{"a", {1}}};
  std::string line = render_svg(two_curves()), bars = render_svg(b);
  std::string svg = stack_svg({line, bars});
  EXPECT_EQ(count(svg, "<?xml"), 1u);
  EXPECT_EQ(count(svg, "<svg "), 3u);
  EXPECT_EQ(count(svg, "</svg>"), 3u);
  EXPECT_NE(svg.find("<svg x=\"0\" y=\"0.00\""), std::string::npos);
  EXPECT_EQ(count(svg, "<g class=\"series\""), 2u);
  EXPECT_EQ(stack_svg({line}), line);
}

}  // namespace
}  // namespace tk::cli
