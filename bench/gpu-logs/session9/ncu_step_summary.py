import csv, sys, re, collections
def steps(path):
    rows=[]
    lines=open(path).read().splitlines()
    start=[i for i,l in enumerate(lines) if l.startswith('"ID"')][0]
    for r in csv.DictReader(lines[start:]):
        if r.get("Metric Name")!="gpu__time_duration.sum": continue
        rows.append((r["Kernel Name"], r["Grid Size"], float(r["Metric Value"].replace(",",""))))
    # split into steps at embed kernels
    out=[]; cur=None
    for name,grid,ns in rows:
        if "embed" in name:
            if cur: out.append(cur)
            cur=[]
        if cur is not None: cur.append((name,grid,ns))
    if cur: out.append(cur)
    return out
def short(n):
    m=re.search(r'dev::(\w+)(<[^(]*>)?',n); return (m.group(1)+(m.group(2) or '')) if m else n[:60]
for p in sys.argv[1:]:
    st=steps(p)
    print(p, "steps", [len(s) for s in st])
    # decode steps: those with ~ one embed + 36*5 kernels; take the last two complete
    dec=[s for s in st if 150<len(s)<250]
    for s in dec[-2:]:
        agg=collections.OrderedDict()
        for name,grid,ns in s:
            k=short(name)
            a=agg.setdefault(k,[0,0.0,grid]); a[0]+=1; a[1]+=ns
        tot=sum(ns for _,_,ns in s)
        print(f"  step total {tot/1e3:.1f} us")
        for k,(n,t,g) in agg.items(): print(f"    {k[:90]:90s} x{n:3d} {t/1e3:9.1f} us  grid {g}")
