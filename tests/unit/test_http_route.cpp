// serve's router (serve/route.h): only "/" and "/metrics" are served, whatever a target's
// escapes, slashes or trailing bytes say (F6: "/metrics%00.txt" was answered as /metrics).
#include <gtest/gtest.h>

#include "serve/route.h"

using namespace schedhot;

TEST(HttpRoute, OnlyTheExactPathsAreServed) {
  EXPECT_EQ(route_target("/metrics"), Route::metrics);
  EXPECT_EQ(route_target("/"), Route::index);
  EXPECT_EQ(route_target("*"), Route::asterisk);
  for (const char* t : {"/metrics%00.txt", "/metrics%00", "/metrics%3Fx", "/metrics%3F", "/metrics%2F", "//metrics",
                        "/metrics/", "/metrics.txt", "/metricsx", "/metrics;x", "/metrics#x", "/./metrics", "/%2e/metrics",
                        "/METRICS", "/metrics%20", "/metrics ", "", "metrics", "/nope", "/metrics/..", "/%00",
                        "http://h/metrics/", "http://h/metrics%00.txt", "%2Fmetrics"})
    EXPECT_EQ(route_target(t), Route::not_found) << t;
}

TEST(HttpRoute, QueryStringsAndEscapesOfTheSamePath) {
  // A query is ignored (Prometheus' scrape `params`; promhttp ignores it too).
  EXPECT_EQ(route_target("/metrics?x=1"), Route::metrics);
  EXPECT_EQ(route_target("/metrics?"), Route::metrics);
  EXPECT_EQ(route_target("/metrics?%00"), Route::metrics);
  EXPECT_EQ(route_target("/?x"), Route::index);
  // RFC 3986's equivalent spelling of the same path, as Go's URL.Path decodes it.
  EXPECT_EQ(route_target("/metric%73"), Route::metrics);
  EXPECT_EQ(route_target("/%6Detrics"), Route::metrics);
  // Absolute-form (RFC 9112 3.2.2).
  EXPECT_EQ(route_target("http://127.0.0.1:9870/metrics"), Route::metrics);
  EXPECT_EQ(route_target("HTTPS://[::1]:9870/metrics?x=1"), Route::metrics);
  EXPECT_EQ(route_target("http://127.0.0.1:9870"), Route::index);
}

TEST(HttpRoute, MalformedEscapesAreBadRequests) {
  for (const char* t : {"/metrics%zz", "/metrics%", "/metrics%4", "/%g0", "/metrics%%41"})
    EXPECT_EQ(route_target(t), Route::bad) << t;
}
