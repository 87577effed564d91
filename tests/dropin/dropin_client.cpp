/* SPDX-License-Identifier: Apache-2.0 */
// dropin_client.cpp — a program written only against the reference
// collector's C ABI, used the way its header-only C++ client uses it: the
// library is dlopen'ed by name, each function is looked up with dlsym, and
// messages are built the way that header builds them (`"key":value,`
// pieces wrapped in braces, std::to_string for numbers; the legacy
// `^key^:value,` text for MarkEvent / MarkSpanAttr). Our own code: it
// includes nothing of the reference's.
//
// usage: dropin_client scenario   records the scenario (dropin_native.c is
//                                 its twin through servprof's C API), with
//                                 collection as the config file says
//        dropin_client symbols    checks that every symbol the header
//                                 resolves is there (exit 1 if not)
#include <dlfcn.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

typedef uint64_t SpanHandle;

struct Abi {
    void *h = nullptr;
    bool (*IsEnable)(uint32_t) = nullptr;
    bool (*IsValidDomain)(const char *) = nullptr;
    SpanHandle (*StartSpanWithName)(const char *) = nullptr;
    void (*MarkSpanAttr)(const char *, SpanHandle) = nullptr;
    void (*EndSpan)(SpanHandle) = nullptr;
    void (*MarkEvent)(const char *) = nullptr;
    void (*StartServerProfiler)() = nullptr;
    void (*StopServerProfiler)() = nullptr;
    void (*AddMetaInfo)(const char *, const char *) = nullptr;
    void (*SpanEndEx)(const char *, const char *, const char *, SpanHandle) = nullptr;
    void (*MarkEventEx)(const char *, const char *, const char *) = nullptr;
    void (*SetProfilerCurrentStep)(int) = nullptr;
};

template <typename F> static void look(void *h, F &f, const char *name)
{
    f = reinterpret_cast<F>(dlsym(h, name));
}

static bool open_abi(Abi &a)
{
    a.h = dlopen("libms_service_profiler.so", RTLD_LAZY);
    if (!a.h) {
        std::fprintf(stderr, "dlopen libms_service_profiler.so: %s\n", dlerror());
        return false;
    }
    look(a.h, a.IsEnable, "IsEnable");
    look(a.h, a.IsValidDomain, "IsValidDomain");
    look(a.h, a.StartSpanWithName, "StartSpanWithName");
    look(a.h, a.MarkSpanAttr, "MarkSpanAttr");
    look(a.h, a.EndSpan, "EndSpan");
    look(a.h, a.MarkEvent, "MarkEvent");
    look(a.h, a.StartServerProfiler, "StartServerProfiler");
    look(a.h, a.StopServerProfiler, "StopServerProfiler");
    look(a.h, a.AddMetaInfo, "AddMetaInfo");
    look(a.h, a.SpanEndEx, "SpanEndEx");
    look(a.h, a.MarkEventEx, "MarkEventEx");
    look(a.h, a.SetProfilerCurrentStep, "SetProfilerCurrentStep");
    return true;
}

// The header's PROF(...) builder, reduced to what the scenario needs: the
// same level / domain checks before any text is built, the same text.
class Prof {
public:
    Prof(Abi &a, uint32_t level) : a_(a), level_(level) {}
    bool on() const { return allow_ && a_.IsEnable && a_.IsEnable(level_); }
    Prof &Domain(const char *d)
    {
        domain_ = d;
        allow_ = a_.IsValidDomain ? a_.IsValidDomain(d) : true;
        return *this;
    }
    Prof &Attr(const char *k, const char *v)
    {
        if (on())
            msg_.append("\"").append(k).append("\":\"").append(v).append("\",");
        return *this;
    }
    template <typename T> Prof &Num(const char *k, T v)
    {
        if (on())
            msg_.append("\"").append(k).append("\":").append(std::to_string(v)).append(",");
        return *this;
    }
    Prof &Raw(const char *k, const std::string &json)
    {
        if (on())
            msg_.append("\"").append(k).append("\":").append(json).append(",");
        return *this;
    }
    template <typename T> Prof &Metric(const char *k, T v)
    {
        return Num((std::string(k) + "=").c_str(), v);
    }
    template <typename T> Prof &MetricInc(const char *k, T v)
    {
        return Num((std::string(k) + "+").c_str(), v);
    }
    Prof &MetricScope(const char *k, const char *v)
    {
        return Attr((std::string("scope#") + k).c_str(), v);
    }
    void Event(const char *name)
    {
        if (!on())
            return;
        Num("type", 0);
        a_.MarkEventEx(name, domain_.c_str(), json().c_str());
    }
    void Link(const char *from, const char *to)
    {
        if (!on())
            return;
        msg_.clear();
        Num("type", 3);
        Attr("from", from);
        Attr("to", to);
        a_.MarkEventEx("Link", domain_.c_str(), json().c_str());
    }
    Prof &SpanStart(const char *name)
    {
        if (on()) {
            name_ = name;
            Num("type", 2);
            span_ = a_.StartSpanWithName(name);
        }
        return *this;
    }
    void SpanEnd()
    {
        if (!on())
            return;
        a_.SpanEndEx(name_.c_str(), domain_.c_str(), json().c_str(), span_);
        a_.EndSpan(span_);
    }

private:
    std::string json() const
    {
        std::string m = msg_;
        if (!m.empty() && m.back() == ',')
            m.pop_back();
        return "{" + m + "}";
    }
    Abi &a_;
    uint32_t level_;
    bool allow_ = true;
    std::string domain_, name_, msg_;
    SpanHandle span_ = 0;
};

static const char *BATCH = "[{\"rid\":\"req-1\",\"iter\":0},{\"rid\":\"req-2\",\"iter\":3}]";

static int scenario(Abi &a)
{
    const uint32_t INFO = 20, DETAILED = 30, VERBOSE = 40;
    a.AddMetaInfo("model", "toy-7b");
    // 1. attributes of each kind
    Prof(a, INFO).Domain("Request").Attr("rid", "req-1").Attr("s", "text").Num("i", 42)
        .Num("d", 0.5).Event("httpReq");
    Prof(a, INFO).Domain("Request").Num("rid", 7).Event("tokenize");
    // 2. metrics
    Prof(a, INFO).Domain("Schedule").Attr("rid", "req-1").Metric("QueueSize", 3)
        .MetricInc("WAITING", 1).MetricScope("QueueName", "WAITING").Event("Enqueue");
    Prof(a, INFO).Domain("KVCache").Metric("UsagePercent", 0.25).Attr("scope#", "req")
        .Event("KVCacheStatus");
    // 3. a batch span: its request list at the start, its size at the end
    {
        Prof p(a, INFO);
        p.Domain("BatchSchedule").Raw("rid", BATCH).Attr("batch_type", "Prefill,Decode");
        p.SpanStart("batchFrameworkProcessing");
        p.Num("batch_size", 2);
        p.SpanEnd();
    }
    {
        Prof p(a, INFO);
        p.Domain("Execute").Raw("rid", BATCH).SpanStart("forward");
        p.SpanEnd();
    }
    // 4. a link, an event above the configured level (not recorded)
    Prof(a, INFO).Link("req-1", "http-1");
    Prof(a, VERBOSE).Domain("Request").Event("hidden");
    // 5. the legacy text forms
    if (a.IsEnable(INFO)) {
        a.MarkEvent("^name^:^legacyEvent^,^domain^:^Request^,^rid^:^req-2^,^type^:0,");
        SpanHandle h = a.StartSpanWithName("legacySpan");
        a.MarkSpanAttr("^name^:^legacySpan^,^domain^:^Execute^,^n^:5,^type^:2,", h);
        a.EndSpan(h);
    }
    // 6. steps, a detailed event
    for (int step = 1; step <= 3; step++)
        a.SetProfilerCurrentStep(step);
    Prof(a, DETAILED).Domain("Execute").Num("step", 3).Event("stepDone");
    Prof(a, INFO).Domain("Request").Attr("rid", "req-1").Event("httpRes");
    return 0;
}

int main(int argc, char **argv)
{
    std::string mode = argc > 1 ? argv[1] : "scenario";
    Abi a;
    if (!open_abi(a))
        return 2;
    if (mode == "symbols") {
        // Everything ServiceProfilerInterface.h looks up, and what the
        // Python package looks up, must be there (GetValidDomain and
        // ParseHttpCtx excepted: docs/dropin.md).
        static const char *const names[] = {
            "IsEnable", "StartSpanWithName", "MarkSpanAttr", "EndSpan", "MarkEvent",
            "StartServerProfiler", "StopServerProfiler", "GetEnableDomainFilter",
            "IsValidDomain", "AddMetaInfo", "SpanEndEx", "MarkEventEx",
            "SetProfilerCurrentStep", "StartSpan", "GetProfPath", "GetAclTaskTimeLevel",
            "GetAclProfAicoreMetrics", "GetTorchProfStack", "GetTorchProfModules",
            "GetTorchProfStepNum", "GetTorchProfilerEnable", "RegisterProfilerStartCallback",
            "RegisterProfilerStopCallback", "RegisterProfilerStartMetricCallback",
            "RegisterProfilerStopMetricCallback", "GetProfilerCurrentStep", "IsTraceEnable",
            "ResAddAttr", "NewSpanData", "SpanActivate", "SpanFillCtxData", "SpanAddAttribute",
            "SpanSetStatus", "SpanEndAndFree"};
        int missing = 0;
        for (const char *n : names)
            if (!dlsym(a.h, n)) {
                std::fprintf(stderr, "missing symbol: %s\n", n);
                missing++;
            }
        bool (*trace)() = reinterpret_cast<bool (*)()>(dlsym(a.h, "IsTraceEnable"));
        if (trace && trace()) {
            std::fprintf(stderr, "IsTraceEnable() said yes\n");
            missing++;
        }
        std::fprintf(stderr, "%zu symbols checked, %d missing\n",
                     sizeof names / sizeof names[0], missing);
        return missing ? 1 : 0;
    }
    if (mode != "scenario") {
        std::fprintf(stderr, "usage: dropin_client [scenario|symbols]\n");
        return 2;
    }
    if (!a.IsEnable || !a.MarkEventEx || !a.SpanEndEx) {
        std::fprintf(stderr, "a symbol is missing\n");
        return 1;
    }
    int rc = scenario(a);
    a.StopServerProfiler(); // drains the store before the test reads it
    return rc;
}
