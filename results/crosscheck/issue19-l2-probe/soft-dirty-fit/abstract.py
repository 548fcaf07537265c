# abstract cyclic dirty dynamics: S lines written cyclically, count cap c; victim policies
import random
from collections import OrderedDict
def run(S, c, pol, k=1, sets=None, passes=2, rev=False, seed=1):
    rng=random.Random(seed)
    dirty=OrderedDict(); spills=[]
    if pol=='set':
        so=[rng.randrange(sets) for _ in range(S)]; sl=[OrderedDict() for _ in range(sets)]
    for ps in range(passes):
        sp=0
        order = range(S) if not (rev and ps==passes-1) else range(S-1,-1,-1)
        for i in order:
            if i in dirty:
                dirty.move_to_end(i)
                if pol=='set': sl[so[i]].move_to_end(i)
                continue
            dirty[i]=None
            if pol=='set': sl[so[i]][i]=None
            if len(dirty)>c:
                if pol=='lrw': v=next(iter(dirty))
                elif pol=='sample':
                    j=rng.randrange(k); it=iter(dirty)
                    for _ in range(j): next(it)
                    v=next(it)
                elif pol=='set':
                    d=sl[so[i]]; v=None
                    for u in d:
                        if u!=i: v=u; break
                    if v is None: continue
                del dirty[v]
                if pol=='set': del sl[so[v]][v]
                sp+=1
        spills.append(sp/S)
    return spills
