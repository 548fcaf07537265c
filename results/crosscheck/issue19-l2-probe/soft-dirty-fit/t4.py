import sim, sys, itertools
C=60<<20
meas={22.5:(0.012,0.011,0.0),25.2:(0.137,0.057,0.02),27:(0.175,0.071,0.028),28.8:(0.40,0.138,0.077)}
for t1,p in [(0.40,0.2),(0.405,0.3),(0.41,0.5),(0.40,0.35)]:
    pol=sim.Policy('s', cap=0.455, victim='sample', q=0.25, t1=t1, p=p)
    out=[]
    for mib in [22.5,25.2,27,28.8]:
        m=sim.run_row(C, mib, True, 'm', pol, assoc='full')[1]
        v=sim.run_row(C, mib, True, 'v', pol, assoc='full')[1]
        w=1-sim.run_row(C, mib, True, 'w', pol, assoc='full')[1]
        out.append('%.3f/%.3f/%.3f'%(m,v,w))
    print(t1,p,' '.join(out),flush=True)
print('meas', ' '.join('%.3f/%.3f/%.3f'%meas[k] for k in [22.5,25.2,27,28.8]))
