#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "icl/io/h5.hpp"

namespace fs = std::filesystem;
using namespace icl::io;

namespace {

using Dims = std::vector<uint64_t>;

class H5Test : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::path(::testing::TempDir()) /
           ("icl_h5_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `fn`, expects H5Error and returns its message.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const H5Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected H5Error";
  return {};
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_F(H5Test, RoundTrip1DAllTypes) {
  const std::vector<double> d{1.5, -2.25, 1e300, 0.0};
  const std::vector<float> fl{0.5f, -3.0f, 7.25f};
  const std::vector<int64_t> i{0, -1, INT64_MAX, INT64_MIN};
  const std::vector<std::string> s{"alpha", "beta", "gamma"};
  {
    File f = File::create(file("a.h5"));
    write(f, "/d", d);
    write(f, "/f", fl);
    write(f, "/i", i);
    write(f, "/s", s);
    write(f, "/empty", std::vector<double>{});
  }
  File f = File::open_read(file("a.h5"));
  Dims dims;
  EXPECT_EQ(read_double(f, "/d", &dims), d);
  EXPECT_EQ(dims, Dims{4});
  const auto fr = read_double(f, "/f", &dims);
  EXPECT_EQ(dims, Dims{3});
  ASSERT_EQ(fr.size(), fl.size());
  for (size_t k = 0; k < fl.size(); ++k) EXPECT_EQ(fr[k], static_cast<double>(fl[k]));
  EXPECT_EQ(read_int64(f, "/i", &dims), i);
  EXPECT_EQ(dims, Dims{4});
  EXPECT_EQ(read_strings(f, "/s", &dims), s);
  EXPECT_EQ(dims, Dims{3});
  EXPECT_TRUE(read_double(f, "/empty", &dims).empty());
  EXPECT_EQ(dims, Dims{0});
}

TEST_F(H5Test, RoundTrip2DAllTypesRowMajor) {
  const std::vector<double> d{1, 2, 3, 4, 5, 6};
  const std::vector<float> fl{1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> i{1, 2, 3, 4, 5, 6};
  const std::vector<std::string> s{"a", "b", "c", "d", "e", "f"};
  {
    File f = File::create(file("b.h5"));
    write(f, "/g/d", d, {2, 3});
    write(f, "/g/f", fl, {3, 2});
    write(f, "/g/i", i, {1, 6});
    write(f, "/g/s", s, {3, 2});
    write(f, "/g/cube", std::vector<double>(24, 1.0), {2, 3, 4});
  }
  File f = File::open_read(file("b.h5"));
  Dims dims;
  EXPECT_EQ(read_double(f, "/g/d", &dims), d);
  EXPECT_EQ(dims, (Dims{2, 3}));
  EXPECT_EQ(read_double(f, "/g/f", &dims), d);
  EXPECT_EQ(dims, (Dims{3, 2}));
  EXPECT_EQ(read_int64(f, "/g/i", &dims), i);
  EXPECT_EQ(dims, (Dims{1, 6}));
  EXPECT_EQ(read_strings(f, "/g/s", &dims), s);
  EXPECT_EQ(dims, (Dims{3, 2}));
  EXPECT_EQ(read_double(f, "/g/cube", &dims).size(), 24u);
  EXPECT_EQ(dims, (Dims{2, 3, 4}));
}

TEST_F(H5Test, DimsMismatchThrowsAndCreatesNothing) {
  File f = File::create(file("c.h5"));
  const std::string msg = error_of([&] { write(f, "/x", std::vector<double>(5, 1.0), {2, 2}); });
  EXPECT_TRUE(contains(msg, "/x")) << msg;
  EXPECT_THROW(write(f, "/y", std::vector<int64_t>(6), {4, 2}), H5Error);
  EXPECT_THROW(write(f, "/z", std::vector<std::string>(2), {3}), H5Error);
  EXPECT_THROW(write(f, "/w", std::vector<float>(2), {1}), H5Error);
  EXPECT_FALSE(exists(f, "/x"));
  EXPECT_FALSE(exists(f, "/y"));
  EXPECT_TRUE(list(f, "/").empty());
}

TEST_F(H5Test, WritingExistingDatasetThrows) {
  File f = File::create(file("dup.h5"));
  write(f, "/d", std::vector<double>{1.0});
  const std::string msg = error_of([&] { write(f, "/d", std::vector<double>{2.0}); });
  EXPECT_TRUE(contains(msg, "H5Dcreate2")) << msg;
  EXPECT_EQ(read_double(f, "/d"), std::vector<double>{1.0});
}

TEST_F(H5Test, Utf8AndEmptyStrings) {
  const std::vector<std::string> s{"", "héllo wörld",         "日本語テキスト", "tab\tand\nnewline",
                                   "", std::string(1000, 'x')};
  {
    File f = File::create(file("s.h5"));
    write(f, "/s", s);
  }
  File f = File::open_read(file("s.h5"));
  EXPECT_EQ(read_strings(f, "/s"), s);
}

TEST_F(H5Test, AttributesOfEveryTypeOnRootGroupAndDataset) {
  const std::vector<std::string> objects{"/", "/grp", "/grp/data"};
  {
    File f = File::create(file("attr.h5"));
    create_group(f, "/grp");
    write(f, "/grp/data", std::vector<double>{1, 2});
    for (const auto& o : objects) {
      set_attr(f, o, "s", "value of " + o);
      set_attr(f, o, "empty", std::string());
      set_attr(f, o, "utf8", std::string("μ=0.5"));
      set_attr(f, o, "d", 0.125);
      set_attr(f, o, "i", int64_t{-42});
      set_attr(f, o, "v", std::vector<double>{1.0, 2.0, 3.5});
      set_attr(f, o, "ev", std::vector<double>{});
    }
  }
  File f = File::open_read(file("attr.h5"));
  for (const auto& o : objects) {
    SCOPED_TRACE(o);
    EXPECT_TRUE(has_attr(f, o, "s"));
    EXPECT_FALSE(has_attr(f, o, "missing"));
    EXPECT_EQ(get_attr_string(f, o, "s"), "value of " + o);
    EXPECT_EQ(get_attr_string(f, o, "empty"), "");
    EXPECT_EQ(get_attr_string(f, o, "utf8"), "μ=0.5");
    EXPECT_EQ(get_attr_double(f, o, "d"), 0.125);
    EXPECT_EQ(get_attr_int64(f, o, "i"), -42);
    EXPECT_EQ(get_attr_double(f, o, "i"), -42.0);
    EXPECT_EQ(get_attr_doubles(f, o, "v"), (std::vector<double>{1.0, 2.0, 3.5}));
    EXPECT_EQ(get_attr_doubles(f, o, "d"), std::vector<double>{0.125});
    EXPECT_TRUE(get_attr_doubles(f, o, "ev").empty());
    EXPECT_THROW(get_attr_double(f, o, "ev"), H5Error);
    EXPECT_THROW(get_attr_double(f, o, "v"), H5Error);
    EXPECT_THROW(get_attr_double(f, o, "s"), H5Error);
    EXPECT_THROW(get_attr_string(f, o, "d"), H5Error);
  }
  const std::string msg = error_of([&] { get_attr_double(f, "/grp", "nope"); });
  EXPECT_TRUE(contains(msg, "nope")) << msg;
  EXPECT_TRUE(contains(msg, "/grp")) << msg;
  EXPECT_TRUE(contains(msg, file("attr.h5"))) << msg;
  EXPECT_THROW(has_attr(f, "/no/such/object", "s"), H5Error);
}

TEST_F(H5Test, SettingAttributeReplacesItEvenWithAnotherType) {
  File f = File::create(file("rep.h5"));
  write(f, "/d", std::vector<int64_t>{1});
  set_attr(f, "/d", "a", "first");
  set_attr(f, "/d", "a", "second, longer than the first");
  EXPECT_EQ(get_attr_string(f, "/d", "a"), "second, longer than the first");
  set_attr(f, "/d", "a", 2.5);
  EXPECT_EQ(get_attr_double(f, "/d", "a"), 2.5);
  set_attr(f, "/d", "a", std::vector<double>{1, 2, 3, 4});
  EXPECT_EQ(get_attr_doubles(f, "/d", "a").size(), 4u);
  set_attr(f, "/", "n", int64_t{1});
  set_attr(f, "/", "n", int64_t{2});
  EXPECT_EQ(get_attr_int64(f, "/", "n"), 2);
}

TEST_F(H5Test, CreateOnExistingFileThrowsAndLeavesItUntouched) {
  const std::string path = file("keep.h5");
  {
    File f = File::create(path);
    write(f, "/d", std::vector<double>{3.0, 4.0});
  }
  const std::string before = slurp(path);
  ASSERT_FALSE(before.empty());
  const std::string msg = error_of([&] { File::create(path); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_EQ(slurp(path), before);
  File f = File::open_read(path);
  EXPECT_EQ(read_double(f, "/d"), (std::vector<double>{3.0, 4.0}));
}

TEST_F(H5Test, CreateTruncateReplacesExistingFile) {
  const std::string path = file("trunc.h5");
  {
    File f = File::create(path);
    write(f, "/old", std::vector<double>{1.0});
  }
  {
    File f = File::create_truncate(path);
    write(f, "/new", std::vector<double>{2.0});
  }
  File f = File::open_read(path);
  EXPECT_EQ(list(f, "/"), std::vector<std::string>{"new"});
}

TEST_F(H5Test, OpenMissingFileThrowsWithPath) {
  const std::string path = file("missing.h5");
  const std::string msg = error_of([&] { File::open_read(path); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "H5Fopen")) << msg;
  EXPECT_THROW(File::open_rw(path), H5Error);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(H5Test, OpenNonHdf5FileThrowsWithPath) {
  const std::string path = file("text.h5");
  std::ofstream(path) << "this is not an HDF5 file\n";
  const std::string msg = error_of([&] { File::open_read(path); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "signature")) << msg;
}

TEST_F(H5Test, ReadOnlyFileRejectsWrites) {
  const std::string path = file("ro.h5");
  File::create(path);
  File f = File::open_read(path);
  EXPECT_THROW(write(f, "/d", std::vector<double>{1.0}), H5Error);
  EXPECT_THROW(set_attr(f, "/", "a", 1.0), H5Error);
  EXPECT_FALSE(exists(f, "/d"));
}

TEST_F(H5Test, ExtendibleDatasetsAppendRowsAndFillGaps) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::string path = file("ext.h5");
  {
    File f = File::create(path);
    create_extendible(f, "/sweep/x", Type::f64, {0, 3}, {4, 3}, nan);
    create_extendible(f, "/sweep/y", Type::f32, {0}, {8});
    create_extendible(f, "/sweep/n", Type::i64, {0}, {8}, -1);
    create_extendible(f, "/sweep/label", Type::str, {0}, {8});
    write_rows(f, "/sweep/x", 0, std::vector<double>{1, 2, 3, 4, 5, 6});
    write_rows(f, "/sweep/x", 2, std::vector<double>{7, 8, 9});
    write_rows(f, "/sweep/x", 5, std::vector<double>{10, 11, 12});
    write_rows(f, "/sweep/y", 0, std::vector<double>{0.5});
    write_rows(f, "/sweep/n", 0, std::vector<int64_t>{10, 11});
    write_rows(f, "/sweep/label", 1, std::vector<std::string>{"β", "c"});
    EXPECT_THROW(write_rows(f, "/sweep/x", 6, std::vector<double>{1, 2}), H5Error);
  }
  {
    File f = File::open_rw(path);
    write_rows(f, "/sweep/n", 2, std::vector<int64_t>{12});
    resize_first(f, "/sweep/n", 5);
    resize_first(f, "/sweep/y", 3);
  }
  File f = File::open_read(path);
  Dims dims;
  const auto x = read_double(f, "/sweep/x", &dims);
  ASSERT_EQ(dims, (Dims{6, 3}));
  const std::vector<double> expect{1, 2, 3, 4, 5, 6, 7, 8, 9, nan, nan, nan, nan, nan, nan, 10, 11, 12};
  for (size_t k = 0; k < x.size(); ++k) {
    if (std::isnan(expect[k]))
      EXPECT_TRUE(std::isnan(x[k])) << k;
    else
      EXPECT_EQ(x[k], expect[k]) << k;
  }
  const auto y = read_double(f, "/sweep/y", &dims);
  ASSERT_EQ(dims, Dims{3});
  EXPECT_EQ(y[0], 0.5);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(read_int64(f, "/sweep/n"), (std::vector<int64_t>{10, 11, 12, -1, -1}));
  EXPECT_EQ(read_strings(f, "/sweep/label"), (std::vector<std::string>{"", "β", "c"}));
}

TEST_F(H5Test, ExtendibleShrinkAndBadArguments) {
  File f = File::create(file("ext2.h5"));
  create_extendible(f, "/d", Type::f64, {4, 2}, {2, 2}, 0.0);
  EXPECT_EQ(read_double(f, "/d"), std::vector<double>(8, 0.0));
  resize_first(f, "/d", 1);
  Dims dims;
  read_double(f, "/d", &dims);
  EXPECT_EQ(dims, (Dims{1, 2}));
  EXPECT_THROW(create_extendible(f, "/e", Type::f64, {0, 2}, {4}), H5Error);
  EXPECT_THROW(create_extendible(f, "/e", Type::i64, {0}, {4}, 1e300), H5Error);
  write(f, "/fixed", std::vector<double>{1, 2});
  EXPECT_THROW(resize_first(f, "/fixed", 5), H5Error);
}

TEST_F(H5Test, ListIsSortedByName) {
  File f = File::create(file("list.h5"));
  write(f, "/zeta", std::vector<double>{1});
  create_group(f, "/beta");
  write(f, "/Alpha/x", std::vector<int64_t>{1});
  write(f, "/alpha", std::vector<std::string>{"s"});
  write(f, "/beta/b2", std::vector<double>{1});
  write(f, "/beta/b10", std::vector<double>{1});
  EXPECT_EQ(list(f, "/"), (std::vector<std::string>{"Alpha", "alpha", "beta", "zeta"}));
  EXPECT_EQ(list(f, "/beta"), (std::vector<std::string>{"b10", "b2"}));
  EXPECT_EQ(list(f, "/Alpha"), std::vector<std::string>{"x"});
  EXPECT_THROW(list(f, "/missing"), H5Error);
  EXPECT_THROW(list(f, "/zeta"), H5Error);
}

TEST_F(H5Test, ExistsChecksEveryComponent) {
  File f = File::create(file("ex.h5"));
  write(f, "/a/b/c", std::vector<double>{1});
  EXPECT_TRUE(exists(f, "/"));
  EXPECT_TRUE(exists(f, "/a"));
  EXPECT_TRUE(exists(f, "/a/b"));
  EXPECT_TRUE(exists(f, "/a/b/c"));
  EXPECT_TRUE(exists(f, "a/b/"));
  EXPECT_FALSE(exists(f, "/b"));
  EXPECT_FALSE(exists(f, "/a/x/c"));
  EXPECT_FALSE(exists(f, "/a/b/c/d"));
  create_group(f, "/g1/g2");
  EXPECT_TRUE(exists(f, "/g1/g2"));
  EXPECT_THROW(create_group(f, "/g1/g2"), H5Error);
}

TEST_F(H5Test, ReadingConvertsStoredType) {
  File f = File::create(file("conv.h5"));
  write(f, "/i", std::vector<int64_t>{-3, 0, 1LL << 40});
  write(f, "/d", std::vector<double>{2.0, -7.0});
  write(f, "/s", std::vector<std::string>{"1"});
  EXPECT_EQ(read_double(f, "/i"), (std::vector<double>{-3.0, 0.0, 1099511627776.0}));
  EXPECT_EQ(read_int64(f, "/d"), (std::vector<int64_t>{2, -7}));
  const std::string msg = error_of([&] { read_double(f, "/s"); });
  EXPECT_TRUE(contains(msg, "H5Dread")) << msg;
  EXPECT_THROW(read_strings(f, "/d"), H5Error);
  const std::string missing = error_of([&] { read_double(f, "/nope"); });
  EXPECT_TRUE(contains(missing, "/nope")) << missing;
  EXPECT_TRUE(contains(missing, "H5Dopen2")) << missing;
}

TEST_F(H5Test, FileHandleMovesFlushesAndCloses) {
  const std::string path = file("mv.h5");
  File a = File::create(path);
  File b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_TRUE(b.valid());
  EXPECT_EQ(b.path(), path);
  write(b, "/d", std::vector<double>{1.0});
  b.flush();
  b.close();
  EXPECT_FALSE(b.valid());
  EXPECT_THROW(read_double(b, "/d"), H5Error);
  File c = File::open_read(path);
  EXPECT_EQ(read_double(c, "/d"), std::vector<double>{1.0});
}
