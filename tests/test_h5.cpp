#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
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
  const std::vector<int64_t> i{0, -1, INT64_MAX, INT64_MIN};
  const std::vector<std::string> s{"alpha", "beta", "gamma"};
  {
    File f = File::create_truncate(file("a.h5"));
    write(f, "/d", d);
    write(f, "/i", i);
    write(f, "/s", s);
    write(f, "/empty", std::vector<double>{});
  }
  File f = File::open_read(file("a.h5"));
  Dims dims;
  EXPECT_EQ(read_double(f, "/d", &dims), d);
  EXPECT_EQ(dims, Dims{4});
  EXPECT_EQ(read_int64(f, "/i", &dims), i);
  EXPECT_EQ(dims, Dims{4});
  EXPECT_EQ(read_strings(f, "/s", &dims), s);
  EXPECT_EQ(dims, Dims{3});
  EXPECT_TRUE(read_double(f, "/empty", &dims).empty());
  EXPECT_EQ(dims, Dims{0});
}

TEST_F(H5Test, RoundTrip2DAllTypesRowMajor) {
  const std::vector<double> d{1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> i{1, 2, 3, 4, 5, 6};
  const std::vector<std::string> s{"a", "b", "c", "d", "e", "f"};
  {
    File f = File::create_truncate(file("b.h5"));
    write(f, "/g/d", d, {2, 3});
    write(f, "/g/i", i, {1, 6});
    write(f, "/g/s", s, {3, 2});
    write(f, "/g/cube", std::vector<double>(24, 1.0), {2, 3, 4});
  }
  File f = File::open_read(file("b.h5"));
  Dims dims;
  EXPECT_EQ(read_double(f, "/g/d", &dims), d);
  EXPECT_EQ(dims, (Dims{2, 3}));
  EXPECT_EQ(read_int64(f, "/g/i", &dims), i);
  EXPECT_EQ(dims, (Dims{1, 6}));
  EXPECT_EQ(read_strings(f, "/g/s", &dims), s);
  EXPECT_EQ(dims, (Dims{3, 2}));
  EXPECT_EQ(read_double(f, "/g/cube", &dims).size(), 24u);
  EXPECT_EQ(dims, (Dims{2, 3, 4}));
}

TEST_F(H5Test, DimsMismatchThrowsAndCreatesNothing) {
  File f = File::create_truncate(file("c.h5"));
  const std::string msg = error_of([&] { write(f, "/x", std::vector<double>(5, 1.0), {2, 2}); });
  EXPECT_TRUE(contains(msg, "/x")) << msg;
  EXPECT_THROW(write(f, "/y", std::vector<int64_t>(6), {4, 2}), H5Error);
  EXPECT_THROW(write(f, "/z", std::vector<std::string>(2), {3}), H5Error);
  EXPECT_FALSE(exists(f, "/x"));
  EXPECT_FALSE(exists(f, "/y"));
  EXPECT_TRUE(list(f, "/").empty());
}

TEST_F(H5Test, WritingExistingDatasetThrows) {
  File f = File::create_truncate(file("dup.h5"));
  write(f, "/d", std::vector<double>{1.0});
  const std::string msg = error_of([&] { write(f, "/d", std::vector<double>{2.0}); });
  EXPECT_TRUE(contains(msg, "H5Dcreate2")) << msg;
  EXPECT_EQ(read_double(f, "/d"), std::vector<double>{1.0});
}

TEST_F(H5Test, Utf8AndEmptyStrings) {
  const std::vector<std::string> s{"", "héllo wörld",         "日本語テキスト", "tab\tand\nnewline",
                                   "", std::string(1000, 'x')};
  {
    File f = File::create_truncate(file("s.h5"));
    write(f, "/s", s);
  }
  File f = File::open_read(file("s.h5"));
  EXPECT_EQ(read_strings(f, "/s"), s);
}

TEST_F(H5Test, AttributesOfEveryTypeOnRootGroupAndDataset) {
  const std::vector<std::string> objects{"/", "/grp", "/grp/data"};
  {
    File f = File::create_truncate(file("attr.h5"));
    write(f, "/grp/data", std::vector<double>{1, 2});
    for (const auto& o : objects) {
      set_attr(f, o, "s", "value of " + o);
      set_attr(f, o, "empty", std::string());
      set_attr(f, o, "utf8", std::string("μ=0.5"));
      set_attr(f, o, "i", int64_t{-42});
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
    EXPECT_EQ(get_attr_int64(f, o, "i"), -42);
    EXPECT_THROW(get_attr_int64(f, o, "s"), H5Error);
    EXPECT_THROW(get_attr_string(f, o, "i"), H5Error);
  }
  const std::string msg = error_of([&] { get_attr_int64(f, "/grp", "nope"); });
  EXPECT_TRUE(contains(msg, "nope")) << msg;
  EXPECT_TRUE(contains(msg, "/grp")) << msg;
  EXPECT_TRUE(contains(msg, file("attr.h5"))) << msg;
  EXPECT_THROW(has_attr(f, "/no/such/object", "s"), H5Error);
}

TEST_F(H5Test, SettingAttributeReplacesItEvenWithAnotherType) {
  File f = File::create_truncate(file("rep.h5"));
  write(f, "/d", std::vector<int64_t>{1});
  set_attr(f, "/d", "a", "first");
  set_attr(f, "/d", "a", "second, longer than the first");
  EXPECT_EQ(get_attr_string(f, "/d", "a"), "second, longer than the first");
  set_attr(f, "/d", "a", int64_t{25});
  EXPECT_EQ(get_attr_int64(f, "/d", "a"), 25);
  set_attr(f, "/", "n", int64_t{1});
  set_attr(f, "/", "n", int64_t{2});
  EXPECT_EQ(get_attr_int64(f, "/", "n"), 2);
}

TEST_F(H5Test, CreateTruncateReplacesExistingFile) {
  const std::string path = file("trunc.h5");
  {
    File f = File::create_truncate(path);
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
  File::create_truncate(path);
  File f = File::open_read(path);
  EXPECT_THROW(write(f, "/d", std::vector<double>{1.0}), H5Error);
  EXPECT_THROW(set_attr(f, "/", "a", int64_t{1}), H5Error);
  EXPECT_FALSE(exists(f, "/d"));
}

TEST_F(H5Test, ListIsSortedByName) {
  File f = File::create_truncate(file("list.h5"));
  write(f, "/zeta", std::vector<double>{1});
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
  File f = File::create_truncate(file("ex.h5"));
  write(f, "/a/b/c", std::vector<double>{1});
  EXPECT_TRUE(exists(f, "/"));
  EXPECT_TRUE(exists(f, "/a"));
  EXPECT_TRUE(exists(f, "/a/b"));
  EXPECT_TRUE(exists(f, "/a/b/c"));
  EXPECT_TRUE(exists(f, "a/b/"));
  EXPECT_FALSE(exists(f, "/b"));
  EXPECT_FALSE(exists(f, "/a/x/c"));
  EXPECT_FALSE(exists(f, "/a/b/c/d"));
}

TEST_F(H5Test, ReadingConvertsStoredType) {
  File f = File::create_truncate(file("conv.h5"));
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

TEST_F(H5Test, FileHandleMovesAndCloses) {
  const std::string path = file("mv.h5");
  File a = File::create_truncate(path);
  File b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_TRUE(b.valid());
  EXPECT_EQ(b.path(), path);
  write(b, "/d", std::vector<double>{1.0});
  b.close();
  EXPECT_FALSE(b.valid());
  EXPECT_THROW(read_double(b, "/d"), H5Error);
  File c = File::open_read(path);
  EXPECT_EQ(read_double(c, "/d"), std::vector<double>{1.0});
}
