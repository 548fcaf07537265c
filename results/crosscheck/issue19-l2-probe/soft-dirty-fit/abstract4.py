import random
from collections import OrderedDict
def run(S, c, pol, lines_per_set, rev=False, seed=1, even=True):
    rng=random.Random(seed)
    sets=max(1,int(round(S/lines_per_set)))
    if even:
        so=[]
        rows=(S+sets-1)//sets
        for r in range(rows):
            p=list(range(sets)); rng.shuffle(p); so+=p
        so=so[:S]
    else:
        so=[rng.randrange(sets) for _ in range(S)]
    sl=[OrderedDict() for _ in range(sets)]
    n=0; ptr=0; out=[]
    for ps in range(2):
        sp=0
        order = range(S-1,-1,-1) if (rev and ps==1) else range(S)
        for i in order:
            d=sl[so[i]]
            if i in d: d.move_to_end(i); continue
            d[i]=None; n+=1
            while n>c:
                if pol=='rset':
                    t=sl[rng.randrange(sets)]
                else:
                    t=sl[ptr]; ptr=(ptr+1)%sets
                if not t: continue
                v=next(iter(t))
                if v==i: continue
                del t[v]; n-=1; sp+=1
        out.append(sp/S)
    return out[-1]
c=20000
for pol in ['rset','rrset']:
  for W in [12,16,24]:
    ms=[];vs=[]
    for xc in [1.055,1.1,1.21,1.37,1.65]:
        S=int(c*xc); lps=xc*0.455*W
        ms.append(round(run(S,c,pol,lps),3)); vs.append(round(run(S,c,pol,lps,rev=True),3))
    print(pol,W,ms,vs)
print('meas m-all [0.40,0.50,0.753,0.894,0.976] m-one [0.49,0.64,0.97,..]')
print('meas v-all [0.138,0.172,0.249,0.356,0.470] v-one [0.11,0.131,0.208,0.303,0.42]')
