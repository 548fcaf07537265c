import time, sim, sys
C=60<<20
assoc=sys.argv[1]; hk=sys.argv[2]
pol=sim.Policy('sample', cap=0.455, victim='sample', q=0.25)
for ev in [True, False]:
  for mib in [22.5,25.2,27,28.8,30,33,37.5,45]:
    t=time.time()
    m=sim.run_row(C, mib, ev, 'm', pol, ways=16, hash_kind=hk, assoc=assoc)
    v=sim.run_row(C, mib, ev, 'v', pol, ways=16, hash_kind=hk, assoc=assoc)
    w=sim.run_row(C, mib, ev, 'w', pol, ways=16, hash_kind=hk, assoc=assoc)
    print('all' if ev else 'one', mib, 'm rd %.3f wr %.3f  v rd %.3f wr %.3f  w held %.3f'%(m+v+(w[1],)), round(time.time()-t,1), flush=True)
