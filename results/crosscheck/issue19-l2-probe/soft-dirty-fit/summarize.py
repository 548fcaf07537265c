import sys, re, collections
def parse(f):
    rows=[]
    for l in open(f):
        m=re.match(r'(h\d00) (\S+)\s+([\d.]+)\s+([\d.]+) (all|one)\s+(\S+) \|\s+(\S+)\s+(\S+) \|\s+(\S+)\s+(\S+) \|\s*(\S*)',l)
        if m: rows.append(m.groups())
    return rows
names=['chosen_dirty_s4','cand_nobnd','cand_setlocal','cand_hard','cand_band','cand_hyst','cand_perset16r','cand_perset32e']
print('| candidate | ' + ' | '.join(['w,d sub','w,d over','m all sub','m all over','m one sub','m one over','v all','v one','a all','a one']) + ' |')
print('|'+'---|'*11)
for n in names:
    g=collections.defaultdict(list)
    for gpu,t,mib,x,side,mode,mr,sr,mw,sw,d in parse('out_%s.txt'%n):
        if not d: continue
        x=float(x); d=float(d)
        if not 0.3<=x<=1.0: continue
        md='w,d' if mode=='w' or mode.startswith('d') else mode
        reg='sub' if x<0.455 else 'over'
        if md=='w,d': key='w,d '+reg
        elif md=='m': key='m %s %s'%(side,reg)
        else: key='%s %s'%(md,side)
        g[key].append(d)
    cells=[]
    for k in ['w,d sub','w,d over','m all sub','m all over','m one sub','m one over','v all','v one','a all','a one']:
        v=g[k]; cells.append('%+.3f / %.3f'%(sum(v)/len(v), max(abs(a) for a in v)) if v else '-')
    print('| %s | %s |'%(n.replace('cand_','').replace('_dirty_s4',''),' | '.join(cells)))
